"""TensorFlow's import, without the jax it would pull in.

Where jax is installed, ``import tensorflow`` imports it too (``tensorflow.lite`` tries ``from jax
import jit``): about 0.5 s of every TensorFlow child's start on 2 cores, and jax's memory. jax is
hidden for that one import only: a workload that imports jax later gets it.
"""

from __future__ import annotations

import sys


def import_tensorflow() -> None:
    """Import TensorFlow, with jax hidden unless something imported it already."""
    if "jax" in sys.modules:
        import tensorflow

        return
    sys.modules["jax"] = None  # type: ignore[assignment]  # an import of jax now fails at once
    try:
        import tensorflow  # noqa: F401
    finally:
        if "jax" in sys.modules and sys.modules["jax"] is None:
            del sys.modules["jax"]


import_tensorflow()
