"""A TensorFlow trial child imports TensorFlow without jax (tuner.worker.backends.tensorflow's
``_framework``): ``tensorflow.lite`` would import it for a converter tuner never calls, ~0.5 s and
~100 MB of every child. A fresh interpreter, as a trial child is."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

CHILD = """
import sys
import tuner.worker.backends.tensorflow
assert "tensorflow" in sys.modules
print("jax loaded" if "jax" in sys.modules else "no jax")
import jax.numpy  # hidden for TensorFlow's import only: a workload may still import it
print(float(jax.numpy.ones(3).sum()))
"""


def test_the_tensorflow_backend_imports_without_jax_and_jax_stays_importable() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["no", "jax", "3.0"]
