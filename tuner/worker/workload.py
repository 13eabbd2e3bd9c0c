"""Inside the child: what a run needs of the workload besides its data (``tuner.worker.inputs``)
— an optimizer and a loss by name, and the framework versions the run used.

Anything the user's code gets wrong becomes a :class:`WorkloadError`, which the child reports
as ``invalid`` (a mistake to fix) rather than as a failed run.
"""

from __future__ import annotations

from typing import Any

import keras

from tuner.core.errors import WorkloadError


def make_optimizer(name: str, learning_rate: float) -> Any:
    """A Keras optimizer by name (``adam``, ``sgd``, ...) at ``learning_rate``."""
    try:
        return keras.optimizers.get(
            {"class_name": name, "config": {"learning_rate": learning_rate}}
        )
    except (ValueError, TypeError) as exc:
        raise WorkloadError(f"unknown Keras optimizer {name!r}: {exc}") from exc


def check_loss(name: str) -> None:
    """Raise :class:`WorkloadError` unless ``name`` is a Keras loss."""
    try:
        keras.losses.get(name)
    except (ValueError, TypeError) as exc:
        raise WorkloadError(f"unknown Keras loss {name!r}") from exc


def framework_versions(backend: str = "tensorflow") -> dict[str, str]:
    """The versions of the frameworks the run used, as the child sees them: TensorFlow and Keras,
    or under JAX Keras, jax and jaxlib (TensorFlow is never imported for it)."""
    if backend == "jax":
        import jax
        import jaxlib

        return {"keras": keras.__version__, "jax": jax.__version__, "jaxlib": jaxlib.__version__}
    import tensorflow as tf

    return {"tensorflow": tf.__version__, "keras": keras.__version__}
