"""Inside the child, under Keras on JAX: keep TensorFlow out of the process.

Keras 3 asks ``tf.available`` in many places on every backend, and asking imports TensorFlow
whenever it is installed: seconds of start-up and memory a JAX run has no use for.
"""

from __future__ import annotations

import contextlib
import sys


def hide_tensorflow() -> None:
    """Make Keras's lazy ``tensorflow`` unavailable unless imported."""
    # Keras internals: on a Keras where they differ, TensorFlow is merely imported.
    with contextlib.suppress(ImportError, AttributeError):
        from keras.src.utils import module_utils

        lazy = module_utils.tensorflow
        if "tensorflow" not in sys.modules and lazy.module is None:
            lazy._available = False


def reveal_tensorflow() -> None:
    """Let Keras find TensorFlow again (the workload imported it)."""
    with contextlib.suppress(ImportError, AttributeError):
        from keras.src.utils import module_utils

        if module_utils.tensorflow.module is None:
            module_utils.tensorflow._available = None
