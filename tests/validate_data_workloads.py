"""Workloads whose data order ``tuner validate`` must make, or find, the same in both runs
(tests/e2e/test_validate_data_order.py):

* :func:`guide_shuffled` — the built-in-methods guide's ``from_tensor_slices(...).shuffle(1024)``
  with no seed (as the guide writes it): validate seeds it, both runs see the same batches;
* :func:`own_rng_stream` — a generator that draws its order from its own unseeded generator
  (``np.random.default_rng()``): no seed reaches it, the runs see other batches, and validate
  says so instead of failing the weights.
"""

from __future__ import annotations

from typing import Any

import numpy as np

FEATURES = 32  # validate_workloads.guide_data's too


def model() -> Any:
    import keras

    return keras.Sequential([keras.Input(shape=(FEATURES,)), keras.layers.Dense(1)])


def _arrays(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.random((n, FEATURES), dtype=np.float32)
    return x, x.sum(axis=1, keepdims=True)


def guide_shuffled() -> tuple[Any, Any]:
    import tensorflow as tf

    x, y = _arrays(256, 0)
    train = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(buffer_size=1024).batch(64)
    val = tf.data.Dataset.from_tensor_slices(_arrays(64, 1)).batch(64)
    return train, val


def own_rng_stream() -> tuple[Any, Any]:
    import tensorflow as tf

    x, y = _arrays(256, 0)

    def shuffled() -> Any:
        rng = np.random.default_rng()  # its own entropy: no seed of tuner's reaches it
        for i in rng.permutation(len(x)):
            yield x[i], y[i]

    spec = (tf.TensorSpec((FEATURES,), tf.float32), tf.TensorSpec((1,), tf.float32))
    train = tf.data.Dataset.from_generator(shuffled, output_signature=spec)
    val = tf.data.Dataset.from_tensor_slices(_arrays(64, 1))
    return train, val
