"""Workloads for the JAX worker's tests (importable as ``jax_test_workloads:...`` with
tests/worker on the child's path): the small regression data as Keras ``PyDataset``\\ s and as
re-iterable lists of batches, and a wide model whose activations outgrow a small memory cap."""

from __future__ import annotations

from typing import Any

import numpy as np

from tuner.workloads import regression

N_TRAIN, N_VAL = 1024, 256


def _arrays() -> tuple[np.ndarray, ...]:
    return regression.make_data(n_train=N_TRAIN, n_val=N_VAL)


def _batches(x: np.ndarray, y: np.ndarray, size: int) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(x[i : i + size], y[i : i + size]) for i in range(0, len(x), size)]


def iterable_data() -> tuple[list[Any], list[Any]]:
    """(train, val) as lists of (x, y) batches of 100 (not the trial's batch: re-cut)."""
    x, y, x_val, y_val = _arrays()
    return _batches(x, y, 100), _batches(x_val, y_val, 100)


def pydataset_data() -> tuple[Any, Any]:
    """(train, val) as Keras PyDatasets of 96-sample batches."""
    import keras

    class Batches(keras.utils.PyDataset):  # type: ignore[misc]
        def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
            super().__init__()
            self._batches = _batches(x, y, 96)

        def __len__(self) -> int:
            return len(self._batches)

        def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
            return self._batches[index]

    x, y, x_val, y_val = _arrays()
    return Batches(x, y), Batches(x_val, y_val)


def generator_data() -> tuple[Any, Any]:
    """(train, val) as one-shot generators: refused (tuner reads the data more than once)."""
    x, y, x_val, y_val = _arrays()
    return (b for b in _batches(x, y, 64)), (b for b in _batches(x_val, y_val, 64))


def wide_model() -> Any:
    """10 -> 80,000 (relu) -> 1: about 320 kB of activations per sample."""
    import keras

    return keras.Sequential(
        [
            keras.Input(shape=(regression.N_FEATURES,)),
            keras.layers.Dense(80_000, activation="relu"),
            keras.layers.Dense(1),
        ]
    )
