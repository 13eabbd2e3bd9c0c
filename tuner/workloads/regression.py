"""The built-in regression workload: the forum answer's dense 10 -> 64 -> 32 -> 1 model, MSE, on
generated data (the forum's random targets carry nothing to learn: here a smooth function of the
features plus noise), enough that a trial spends its time in steady-state training."""

from __future__ import annotations

from typing import Any

import numpy as np

N_TRAIN = 65_536
N_VAL = 8_192
N_FEATURES = 10


def build_model() -> Any:
    """Return the uncompiled 10 -> 64 (relu) -> 32 (relu) -> 1 model."""
    import keras

    return keras.Sequential(
        [
            keras.Input(shape=(N_FEATURES,)),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dense(1),
        ],
        name="regression",
    )


def make_data(
    n_train: int = N_TRAIN, n_val: int = N_VAL, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Generate ``(x_train, y_train, x_val, y_val)`` deterministically from ``seed``."""
    rng = np.random.default_rng(seed)
    weights = rng.normal(size=(N_FEATURES,)).astype(np.float32)
    x = rng.random((n_train + n_val, N_FEATURES), dtype=np.float32)
    signal = np.sin(3.0 * x @ weights) + 0.5 * (x[:, 0] - x[:, 1]) ** 2
    y = (signal + 0.05 * rng.normal(size=signal.shape)).astype(np.float32)[:, None]
    return x[:n_train], y[:n_train], x[n_train:], y[n_train:]


def load_data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The built-in data set: 65,536 training and 8,192 validation samples."""
    return make_data()
