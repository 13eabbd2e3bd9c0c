"""A ``keras.utils.PyDataset`` subclass as the training data (the ``PyDataset`` docs' example):
batches sliced from arrays in ``__getitem__``; ``load_data`` returns ``(train, val)`` of them, on
CIFAR-10-shaped images and a small convnet."""

from __future__ import annotations

import math
from typing import Any

import keras
import numpy as np


class CIFAR10PyDataset(keras.utils.PyDataset):
    def __init__(self, x_set: Any, y_set: Any, batch_size: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.x, self.y = x_set, y_set
        self.batch_size = batch_size

    def __len__(self) -> int:
        # Return number of batches.
        return math.ceil(len(self.x) / self.batch_size)

    def __getitem__(self, idx: int) -> tuple[Any, Any]:
        # Return x, y for batch idx.
        low = idx * self.batch_size
        # Cap upper bound at array length; the last batch may be smaller
        # if the total number of items is not a multiple of batch size.
        high = min(low + self.batch_size, len(self.x))
        return self.x[low:high], self.y[low:high]


def arrays() -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(0)
    x = rng.random((640, 32, 32, 3), dtype=np.float32)
    y = rng.integers(0, 10, size=(640,))
    x[np.arange(640), y * 3, :, :] += 1.0
    return x[:512], y[:512], x[512:], y[512:]


def load_data(batch_size: int = 32) -> tuple[Any, Any]:
    x_train, y_train, x_val, y_val = arrays()
    return (
        CIFAR10PyDataset(x_train, y_train, batch_size=batch_size),
        CIFAR10PyDataset(x_val, y_val, batch_size=batch_size),
    )


def build_model() -> Any:
    from keras import layers

    return keras.Sequential(
        [
            keras.Input(shape=(32, 32, 3)),
            layers.Conv2D(16, 3, activation="relu"),
            layers.MaxPooling2D(),
            layers.Conv2D(32, 3, activation="relu"),
            layers.GlobalAveragePooling2D(),
            layers.Dense(10, activation="softmax"),
        ]
    )
