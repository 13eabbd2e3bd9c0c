"""Customizing what happens in ``fit()`` (the TensorFlow guide's first example): a ``keras.Model``
subclass whose ``train_step`` computes the loss with ``self.compute_loss`` and updates the
compiled metrics, the loss tracker included; built functionally and compiled in the build.
Written as the guide writes it, Keras and TensorFlow imported at the top."""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
import tensorflow as tf


class CustomModel(keras.Model):
    def train_step(self, data: Any) -> Any:
        # Unpack the data. Its structure depends on your model and on what you pass to `fit()`.
        x, y = data

        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)  # Forward pass
            # Compute the loss value (the loss function is configured in `compile()`)
            loss = self.compute_loss(y=y, y_pred=y_pred)

        # Compute gradients
        trainable_vars = self.trainable_variables
        gradients = tape.gradient(loss, trainable_vars)

        # Update weights
        self.optimizer.apply(gradients, trainable_vars)

        # Update metrics (includes the metric that tracks the loss)
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred)

        # Return a dict mapping metric names to current value
        return {m.name: m.result() for m in self.metrics}


def build_model() -> Any:
    inputs = keras.Input(shape=(32,))
    outputs = keras.layers.Dense(1)(inputs)
    model = CustomModel(inputs, outputs)
    model.compile(optimizer="adam", loss="mse", metrics=["mae"])
    return model


def load_data() -> tuple[np.ndarray, ...]:
    """Random inputs of 32 features and a target that depends on them."""
    rng = np.random.default_rng(0)
    x = rng.random((1280, 32), dtype=np.float32)
    y = (x[:, :8].sum(axis=1, keepdims=True) / 8).astype("float32")
    return x[:1024], y[:1024], x[1024:], y[1024:]
