"""A custom ``keras.losses.Loss`` subclass compiled in the build, unregistered (the built-in-methods
guide's ``CustomMSE``: mean squared error plus a term that pulls predictions towards 0.5)."""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from workloads.sample_weights import get_uncompiled_model, mnist_like


class CustomMSE(keras.losses.Loss):
    def __init__(self, regularization_factor: float = 0.1, name: str = "custom_mse") -> None:
        super().__init__(name=name)
        self.regularization_factor = regularization_factor

    def call(self, y_true: Any, y_pred: Any) -> Any:
        mse = ops.mean(ops.square(y_true - y_pred), axis=-1)
        reg = ops.mean(ops.square(0.5 - y_pred), axis=-1)
        return mse + reg * self.regularization_factor


def build_model() -> Any:
    model = get_uncompiled_model()
    model.compile(optimizer=keras.optimizers.Adam(), loss=CustomMSE())
    return model


def load_data() -> tuple[Any, ...]:
    """The guide's digits with one-hot targets (``CustomMSE`` compares them to the softmax)."""
    x_train, y_train = mnist_like(1024, seed=0)
    x_val, y_val = mnist_like(256, seed=1)
    return (
        x_train,
        keras.utils.to_categorical(y_train, 10),
        x_val,
        keras.utils.to_categorical(y_val, 10),
    )
