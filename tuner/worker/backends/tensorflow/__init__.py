"""TensorFlow: a run under ``tf.distribute.MirroredStrategy`` (the :class:`Framework` face)."""

from __future__ import annotations

from tuner.worker.backends.tensorflow import _framework  # noqa: F401  (first: TensorFlow without jax)
from tuner.worker.backends.tensorflow._inputs import (
    first_batch,
    load_source,
    refuse_across_replicas,
)
from tuner.worker.backends.tensorflow._noise import measure_noise_once
from tuner.worker.backends.tensorflow._session import open_session, versions

NAME = "tensorflow"

__all__ = [
    "NAME",
    "first_batch",
    "load_source",
    "measure_noise_once",
    "open_session",
    "prepare",
    "refuse_across_replicas",
    "versions",
]


def prepare() -> None:
    """Nothing to set up: TensorFlow's devices are set when a run builds its strategy."""
