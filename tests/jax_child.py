"""Run a test's script with Keras on JAX over two host CPU devices, in a child process (the
pytest process has Keras on TensorFlow, and a process picks its Keras backend once)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

JAX_ENV = {
    "KERAS_BACKEND": "jax",
    "JAX_PLATFORMS": "cpu",
    "XLA_FLAGS": "--xla_force_host_platform_device_count=2",
}


def run_jax(code: str) -> dict[str, Any]:
    """Run ``code`` with Keras on JAX over two host CPU devices; the JSON its last line prints."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env={**os.environ, **JAX_ENV},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]
