"""TensorFlow's import, without the jax it would pull in.

Where jax is installed (tuner's JAX backend, or the user's), ``import tensorflow`` imports it too:
``tensorflow.lite`` tries ``from jax import jit`` for a converter tuner never calls. That is about
0.5 s of every TensorFlow trial child's start on our 2-core machines (a sixth of its import) and
jax's memory besides. jax is hidden for that one import only: a workload that imports jax later
gets it, and ``tf.lite``'s jax converter (``experimental_from_jax``) says it cannot import jax.
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
