"""KerasTuner's "Tune hyperparameters in your custom training loop" guide: ``build_model(hp)``
ends in ``layers.Dense(units=10)`` with no activation — logits — and the guide trains it with
``keras.losses.SparseCategoricalCrossentropy(from_logits=True)``; uncompiled, so the spec gives
that loss in Keras's serialized form. MNIST-shaped images ``(28, 28, 1)`` in [0, 1] with integer
labels, synthetic and tiny."""

from __future__ import annotations

from typing import Any

import numpy as np


def build_model(hp: Any) -> Any:
    """The guide's ``build_model(hp)``: no softmax, no compile."""
    import keras

    inputs = keras.Input(shape=(28, 28, 1))
    x = keras.layers.Flatten()(inputs)
    x = keras.layers.Dense(units=hp.Choice("units", [32, 64, 128]), activation="relu")(x)
    outputs = keras.layers.Dense(units=10)(x)
    return keras.Model(inputs=inputs, outputs=outputs)


def load_data() -> tuple[np.ndarray, ...]:
    """The guide's MNIST preparation (``reshape((-1, 28, 28, 1)) / 255``, integer labels) on
    synthetic digits whose class brightens one row: 512 to train on, 128 to validate."""
    rng = np.random.default_rng(0)
    n = 640
    y = rng.integers(0, 10, size=n)
    pixels = rng.integers(0, 128, size=(n, 28, 28)).astype("float32")
    pixels[np.arange(n), 2 * y + 4, :] += 127.0
    x = (pixels / 255.0).reshape((-1, 28, 28, 1)).astype("float32")
    return x[:512], y[:512], x[512:], y[512:]
