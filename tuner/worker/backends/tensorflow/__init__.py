"""TensorFlow: a run under ``tf.distribute.MirroredStrategy`` (the :class:`Framework` face)."""

from __future__ import annotations

from tuner.worker.backends.tensorflow import _framework  # noqa: F401  (first: TensorFlow without jax)
from tuner.worker.backends.tensorflow._inputs import first_batch as first_batch
from tuner.worker.backends.tensorflow._inputs import load_source as load_source
from tuner.worker.backends.tensorflow._inputs import (
    refuse_across_replicas as refuse_across_replicas,
)
from tuner.worker.backends.tensorflow._noise import measure_noise_once as measure_noise_once
from tuner.worker.backends.tensorflow._session import open_session as open_session
from tuner.worker.backends.tensorflow._session import versions as versions


def prepare() -> None:
    """Nothing to set up: TensorFlow's devices are set when a run builds its strategy."""
