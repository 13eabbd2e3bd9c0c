"""A subclassed model (``keras.Model`` with layers made in ``__init__`` and a ``call()``), as the
``keras.Model`` docs write it: Dense, Dropout only in training, a softmax over 5 classes."""

from __future__ import annotations

from typing import Any

import keras
import numpy as np


class MyModel(keras.Model):
    def __init__(self) -> None:
        super().__init__()
        self.dense1 = keras.layers.Dense(32, activation="relu")
        self.dense2 = keras.layers.Dense(5, activation="softmax")
        self.dropout = keras.layers.Dropout(0.5)

    def call(self, inputs: Any, training: bool = False) -> Any:
        x = self.dense1(inputs)
        x = self.dropout(x, training=training)
        return self.dense2(x)


def build_model() -> Any:
    return MyModel()


def load_data() -> tuple[np.ndarray, ...]:
    """16 features, integer labels of shape (N,): the class is the largest of 5 feature sums."""
    rng = np.random.default_rng(0)
    x = rng.random((1280, 16), dtype=np.float32)
    y = x[:, :15].reshape(-1, 5, 3).sum(axis=2).argmax(axis=1)
    return x[:1024], y[:1024], x[1024:], y[1024:]
