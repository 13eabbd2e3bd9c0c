"""A workload whose learning rate matters a lot and whose seeds matter little, for the early-stop
tests: linear regression with label noise (written as Keras's examples write a model: a
``keras.Sequential`` of an ``Input`` and a ``Dense``). Its loss converges to the label noise for
every seed at a good rate; Adam at four times that rate keeps jittering around the optimum, its
loss well above the noise, without diverging."""

from __future__ import annotations

import keras
import numpy as np

FEATURES = 8
NOISE = 0.1


def build_model() -> keras.Model:
    return keras.Sequential([keras.Input(shape=(FEATURES,)), keras.layers.Dense(1)])


def load_data() -> tuple[np.ndarray, ...]:
    """4,096 training and 1,024 validation samples of ``y = x . w + noise``."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5120, FEATURES)).astype("float32")
    w = rng.normal(size=(FEATURES, 1)).astype("float32")
    y = (x @ w + NOISE * rng.normal(size=(5120, 1))).astype("float32")
    return x[:4096], y[:4096], x[4096:], y[4096:]
