"""The endpoint layer of Keras's guides ("The Functional API", "Making new layers and models via
subclassing"): ``LogisticEndpoint`` computes the loss from the targets inside ``call`` and adds it
with ``self.add_loss``; the model takes ``inputs`` and ``targets`` as a dict and is compiled
with an optimizer and no loss."""

from __future__ import annotations

from typing import Any

import numpy as np


def build_model() -> Any:
    import keras

    class LogisticEndpoint(keras.layers.Layer):
        def __init__(self, name: str | None = None) -> None:
            super().__init__(name=name)
            self.loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)

        def call(self, targets: Any, logits: Any, sample_weights: Any = None) -> Any:
            # The training-time loss, added to the layer with add_loss().
            loss = self.loss_fn(targets, logits, sample_weights)
            self.add_loss(loss)
            # The inference-time prediction.
            return keras.ops.softmax(logits)

    inputs = keras.Input(shape=(3,), name="inputs")
    targets = keras.Input(shape=(10,), name="targets")
    logits = keras.layers.Dense(10)(inputs)
    predictions = LogisticEndpoint(name="predictions")(targets, logits)
    model = keras.Model(inputs=[inputs, targets], outputs=predictions)
    model.compile(optimizer="adam")  # no loss argument
    return model


def load_data() -> tuple[Any, Any]:
    """``(train, val)`` datasets of ``{"inputs": ..., "targets": ...}`` dicts, no separate y."""
    import tensorflow as tf

    rng = np.random.default_rng(0)

    def split(n: int) -> Any:
        data = {
            "inputs": rng.random((n, 3), dtype=np.float32),
            "targets": rng.random((n, 10), dtype=np.float32),
        }
        return tf.data.Dataset.from_tensor_slices(data).batch(64)

    return split(256), split(64)
