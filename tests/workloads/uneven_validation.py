"""A validation set that does not split evenly over the replicas: a tiny MLP on arrays, as the
Keras examples fit one (``model.fit(x, y, batch_size=64)``), 256 training rows and 61 validation
rows, so that at a global batch of 64 on two replicas the one validation batch is 31 + 30 rows
(plain Keras's ``evaluate`` under ``MirroredStrategy`` fails on it: ``AddN ... must have the
same size and shape``)."""

from __future__ import annotations

from typing import Any

import numpy as np


def build_model() -> Any:
    import keras

    model = keras.Sequential(
        [
            keras.Input(shape=(8,)),
            keras.layers.Dense(16, activation="relu"),
            keras.layers.Dense(1),
        ]
    )
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse")
    return model


def load_data() -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(0)
    x = rng.random((256 + 61, 8), dtype=np.float32)
    y = x.sum(axis=1, keepdims=True) + 0.1 * rng.standard_normal((len(x), 1), dtype=np.float32)
    return x[:256], y[:256], x[256:], y[256:]
