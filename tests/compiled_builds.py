"""Builds that compile their model, as a user's own script does (issue 28, part 3); importable
as ``compiled_builds:<function>`` from ``tests/`` (on ``PYTHONPATH`` in children).

``custom_objects`` compiles with classes defined inside the build, so that no registration or
import path could find them: the training guide's ``CustomMSE`` loss, a stateful custom metric
and an SGD subclass. ``sgd_mae`` compiles with SGD and MAE (the spec may say adam and mse).
Both train on :func:`regression_data`, ten features and one target.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def regression_data() -> tuple[np.ndarray, ...]:
    """1,024 training and 256 validation samples of a linear target with noise."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1280, 10)).astype("float32")
    y = (x @ rng.normal(size=(10, 1)) + 0.1 * rng.normal(size=(1280, 1))).astype("float32")
    return x[:1024], y[:1024], x[1024:], y[1024:]


def _mlp() -> Any:
    import keras

    return keras.Sequential(
        [keras.Input(shape=(10,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)]
    )


def _custom_classes() -> tuple[type, type, type]:
    import keras
    from keras import ops

    class CustomMSE(keras.losses.Loss):
        def __init__(self, regularization_factor: float = 0.1, name: str = "custom_mse") -> None:
            super().__init__(name=name)
            self.regularization_factor = regularization_factor

        def call(self, y_true: Any, y_pred: Any) -> Any:
            mse = ops.mean(ops.square(y_true - y_pred), axis=-1)
            reg = ops.mean(ops.square(0.5 - y_pred), axis=-1)
            return mse + reg * self.regularization_factor

    class MeanAbsoluteErrorSum(keras.metrics.Metric):
        def __init__(self, name: str = "abs_error", **kwargs: Any) -> None:
            super().__init__(name=name, **kwargs)
            self.total = self.add_variable(shape=(), initializer="zeros", name="total")
            self.count = self.add_variable(shape=(), initializer="zeros", name="count")

        def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
            error = ops.abs(ops.cast(y_true, "float32") - ops.cast(y_pred, "float32"))
            self.total.assign_add(ops.sum(error))
            self.count.assign_add(ops.cast(ops.size(error), "float32"))

        def result(self) -> Any:
            return self.total / ops.maximum(self.count, 1.0)

    class CarefulSGD(keras.optimizers.SGD):
        """An SGD subclass, unregistered, with a setting of its own."""

        def __init__(self, *args: Any, care: float = 1.0, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.care = care

        def get_config(self) -> dict[str, Any]:
            return {**super().get_config(), "care": self.care}

    return CustomMSE, MeanAbsoluteErrorSum, CarefulSGD


def custom_objects() -> Any:
    """Compiled with an unregistered ``CustomMSE``, a custom metric and a custom optimizer."""
    custom_mse, metric, optimizer = _custom_classes()
    model = _mlp()
    model.compile(
        optimizer=optimizer(learning_rate=0.05, momentum=0.5, care=0.25),
        loss=custom_mse(),
        metrics=[metric()],
    )
    return model


def sgd_mae() -> Any:
    """Compiled with SGD (momentum 0.9, a rate tuner replaces by the rule's) and MAE."""
    import keras

    model = _mlp()
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.5, momentum=0.9), loss="mae")
    return model


def uncompiled() -> Any:
    """The same model, not compiled: the spec must name its loss and optimizer."""
    return _mlp()
