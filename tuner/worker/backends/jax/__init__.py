"""Keras 3 on JAX: a run under ``keras.distribution.DataParallel`` (the :class:`Framework` face).
TensorFlow is never imported, unless the workload's own data are ``tf.data`` datasets."""

from __future__ import annotations

from tuner.worker.backends.jax._gang import leave_gang as leave_gang
from tuner.worker.backends.jax._inputs import first_batch as first_batch
from tuner.worker.backends.jax._inputs import load_source as load_source
from tuner.worker.backends.jax._inputs import refuse_across_replicas as refuse_across_replicas
from tuner.worker.backends.jax._no_tensorflow import hide_tensorflow
from tuner.worker.backends.jax._noise import measure_noise_once as measure_noise_once
from tuner.worker.backends.jax._session import open_session as open_session
from tuner.worker.backends.jax._session import versions as versions


def prepare() -> None:
    """Tell Keras that TensorFlow is not there (unless imported): it would import it otherwise."""
    hide_tensorflow()
