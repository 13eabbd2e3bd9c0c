"""The workload of ``benchmarks/early_stop.py grid``: a wide MLP learning a fixed random teacher
network (regression), written as Keras's examples write a model — a ``keras.Sequential`` of an
``Input`` and ``Dense`` layers, arrays from a ``load_data()``. Two 512-wide layers make it nearly
compute-bound on CPU (on one device the throughput rose only 1.3-1.5x from batch 32 to 256), so
small batches reach a loss target first; a learning rate scaled up with the batch overshoots,
one left as it is takes too few steps. On two replicas it trains 3-4x faster than on one: the
best times to the target are under a second there (benchmarks/RESULTS.md)."""

from __future__ import annotations

import keras
import numpy as np

FEATURES = 64
WIDTH = 512


def build_model() -> keras.Model:
    return keras.Sequential(
        [
            keras.Input(shape=(FEATURES,)),
            keras.layers.Dense(WIDTH, activation="relu"),
            keras.layers.Dense(WIDTH, activation="relu"),
            keras.layers.Dense(1),
        ]
    )


def load_data() -> tuple[np.ndarray, ...]:
    """32,768 training and 1,024 validation samples of a random two-layer teacher's output."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(33792, FEATURES)).astype("float32")
    w1 = rng.normal(size=(FEATURES, 32)) / np.sqrt(FEATURES)
    w2 = rng.normal(size=(32, 1)) / np.sqrt(32)
    y = (np.tanh(x @ w1) @ w2 + 0.05 * rng.normal(size=(33792, 1))).astype("float32")
    return x[:32768], y[:32768], x[32768:], y[32768:]
