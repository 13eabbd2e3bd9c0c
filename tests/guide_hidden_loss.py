"""Customizing what happens in ``fit()`` (the TensorFlow guide), "Going lower-level": a
``keras.Model`` whose ``train_step`` computes its loss with a loss object of its own and keeps
its own loss tracker, compiled with an optimizer only (``model.compile(optimizer="adam")``), as
the guide writes it, with an evaluation step written the same way ("Providing your own
evaluation step", on its own loss: Keras's would ask for a compiled one). It trains under
``fit``; its loss is out of the gradient noise meter's
sight (no compiled loss, no ``compute_loss`` of its own), so the meter is skipped with the
reason. Importable as ``guide_hidden_loss:build_model`` from tests/."""

from __future__ import annotations

from typing import Any

import keras
import numpy as np


def build_model() -> Any:
    """The guide's lower-level ``CustomModel`` on 32 features, compiled with Adam alone."""
    model = uncompiled_model()
    # We don't pass a loss or metrics here.
    model.compile(optimizer="adam")
    return model


def uncompiled_model() -> Any:
    """The same ``CustomModel``, left for tuner to compile."""
    import tensorflow as tf

    class CustomModel(keras.Model):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.loss_tracker = keras.metrics.Mean(name="loss")
            self.mae_metric = keras.metrics.MeanAbsoluteError(name="mae")
            self.loss_fn = keras.losses.MeanSquaredError()

        def train_step(self, data: Any) -> Any:
            x, y = data

            with tf.GradientTape() as tape:
                y_pred = self(x, training=True)  # Forward pass
                # Compute our own loss
                loss = self.loss_fn(y, y_pred)

            # Compute gradients
            trainable_vars = self.trainable_variables
            gradients = tape.gradient(loss, trainable_vars)

            # Update weights
            self.optimizer.apply(gradients, trainable_vars)

            # Compute our own metrics
            self.loss_tracker.update_state(loss)
            self.mae_metric.update_state(y, y_pred)
            return {"loss": self.loss_tracker.result(), "mae": self.mae_metric.result()}

        def test_step(self, data: Any) -> Any:
            # The guide's own evaluation step, with the same loss of its own.
            x, y = data
            y_pred = self(x, training=False)
            self.loss_tracker.update_state(self.loss_fn(y, y_pred))
            self.mae_metric.update_state(y, y_pred)
            return {m.name: m.result() for m in self.metrics}

        @property
        def metrics(self) -> list[Any]:
            # We list our `Metric` objects here so that `reset_states()` can be
            # called automatically at the start of each epoch
            # or at the start of `evaluate()`.
            return [self.loss_tracker, self.mae_metric]

    inputs = keras.Input(shape=(32,))
    outputs = keras.layers.Dense(1)(inputs)
    return CustomModel(inputs, outputs)


def load_data() -> tuple[np.ndarray, ...]:
    """Random inputs of 32 features and a target that depends on them: 1,024 training and 256
    validation samples."""
    rng = np.random.default_rng(0)
    x = rng.random((1280, 32), dtype=np.float32)
    y = (x[:, :8].sum(axis=1, keepdims=True) / 8).astype("float32")
    return x[:1024], y[:1024], x[1024:], y[1024:]
