"""Inside the child: what a run needs of the workload besides its data (which the backends' input
layers read) — an optimizer and a loss by name.

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
