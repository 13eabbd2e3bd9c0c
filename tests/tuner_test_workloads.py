"""Small workloads for the tests (importable as ``tuner_test_workloads:...`` from tests/)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tuner.workloads import regression


def small_regression_data() -> tuple[np.ndarray, ...]:
    """The built-in regression data, smaller: 4,096 training and 1,024 validation samples."""
    return regression.make_data(n_train=4096, n_val=1024)


def wide_model() -> Any:
    """64 -> Dense(8192) -> 1: its activations grow fast with the batch (out-of-memory tests)."""
    import keras

    return keras.Sequential(
        [
            keras.Input(shape=(64,)),
            keras.layers.Dense(8192, activation="relu"),
            keras.layers.Dense(1),
        ]
    )


def wide_data() -> tuple[np.ndarray, ...]:
    """16,384 + 1,024 samples of 64 features for :func:`wide_model`."""
    rng = np.random.default_rng(0)
    x = rng.random((17_408, 64), dtype=np.float32)
    y = x[:, :1] * 2.0 - x[:, 1:2]
    return x[:16_384], y[:16_384], x[16_384:], y[16_384:]


def raising_data() -> tuple[np.ndarray, ...]:
    """A data function that fails, as a user's loader might."""
    raise FileNotFoundError("no such file: /data/train.npz")


def mismatched_data() -> tuple[np.ndarray, ...]:
    """Data with 7 features for a model that expects 10."""
    rng = np.random.default_rng(0)
    return (
        rng.random((512, 7), dtype=np.float32),
        rng.random((512, 1), dtype=np.float32),
        rng.random((64, 7), dtype=np.float32),
        rng.random((64, 1), dtype=np.float32),
    )
