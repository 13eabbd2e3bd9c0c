"""Inside the child, under Keras on JAX: keep TensorFlow out of the process.

Keras 3 asks ``tf.available`` in many places on every backend, and asking imports TensorFlow
whenever it is installed: seconds of start-up and memory a JAX run has no use for.
"""

from __future__ import annotations

import sys


def hide_tensorflow() -> bool:
    """Make Keras's lazy ``tensorflow`` unavailable unless imported; whether it is hidden."""
    try:  # Keras internals: on a Keras where they differ, TensorFlow is merely imported
        from keras.src.utils import module_utils

        lazy = module_utils.tensorflow
        if "tensorflow" in sys.modules or lazy.module is not None:
            return False
        lazy._available = False
    except (ImportError, AttributeError):
        return False
    return True


def reveal_tensorflow() -> None:
    """Let Keras find TensorFlow again (the workload imported it)."""
    try:
        from keras.src.utils import module_utils

        if module_utils.tensorflow.module is None:
            module_utils.tensorflow._available = None
    except (ImportError, AttributeError):
        pass
