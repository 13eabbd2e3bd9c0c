"""Inside the child: the user's workload as a run needs it — checked data arrays, an optimizer
and a loss by name, and the framework versions the run used.

Anything the user's code gets wrong becomes a :class:`WorkloadError`, which the child reports
as ``invalid`` (a mistake to fix) rather than as a failed run.
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
import tensorflow as tf

from tuner.core.errors import WorkloadError
from tuner.workloads import resolve

Arrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""``(x_train, y_train, x_val, y_val)``."""


def load_arrays(data_ref: str) -> Arrays:
    """Call the workload's data function; its four arrays, each non-empty, x and y paired."""
    data = _call(data_ref)
    if not isinstance(data, tuple | list) or len(data) != 4:
        raise WorkloadError(f"{data_ref} must return (x_train, y_train, x_val, y_val)")
    arrays = tuple(np.asarray(item) for item in data)
    names = ("x_train", "y_train", "x_val", "y_val")
    for name, array in zip(names, arrays, strict=True):
        if array.ndim == 0 or array.shape[0] == 0:
            raise WorkloadError(f"{data_ref}: {name} is empty")
    if arrays[0].shape[0] != arrays[1].shape[0] or arrays[2].shape[0] != arrays[3].shape[0]:
        raise WorkloadError(f"{data_ref}: x and y have different numbers of samples")
    return arrays  # type: ignore[return-value]


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


def framework_versions() -> dict[str, str]:
    """TensorFlow and Keras versions as the child sees them."""
    return {"tensorflow": tf.__version__, "keras": keras.__version__}


def _call(reference: str) -> Any:
    """Call the user's ``module:function``; anything it raises is a :class:`WorkloadError`."""
    function = resolve(reference)
    try:
        return function()
    except Exception as exc:
        raise WorkloadError(f"{reference} raised {type(exc).__name__}: {exc}") from exc
