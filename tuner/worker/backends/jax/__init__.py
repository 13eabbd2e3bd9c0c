"""Keras 3 on JAX: a run under ``keras.distribution.DataParallel`` (the :class:`Framework` face).

``_session`` opens a run (devices, data, the initial weights built with no distribution, the
model compiled in its loop); ``_devices`` starts JAX on the plan's devices, caps CPU memory and
reads device memory; ``_inputs`` reads arrays, ``PyDataset``\\ s, iterables and ``tf.data``
datasets as NumPy batches; ``_loop`` trains with Keras ``fit``; ``_noise`` measures the gradient
noise scale per shard; ``_evidence`` is what ``tuner validate`` reads (each device's weights);
``_no_tensorflow`` keeps TensorFlow out of the process. TensorFlow is never imported, unless the
workload's own data are ``tf.data`` datasets.
"""

from __future__ import annotations

from tuner.worker.backends.jax._inputs import first_batch, load_source, refuse_across_replicas
from tuner.worker.backends.jax._no_tensorflow import hide_tensorflow
from tuner.worker.backends.jax._noise import measure_noise_once
from tuner.worker.backends.jax._session import open_session, versions

NAME = "jax"

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
    """Tell Keras that TensorFlow is not there (unless something imported it already), before
    any run asks: Keras would otherwise import it, seconds of start-up and memory."""
    hide_tensorflow()
