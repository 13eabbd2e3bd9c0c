"""KerasTuner's getting-started guide: a ``Sequential`` built without ``keras.Input`` (Flatten,
Dense, optional Dropout, softmax) on MNIST-shaped images with one-hot labels; ``build_model(hp)``
is the guide's hypermodel (``hp.Int``, ``hp.Choice``, ``hp.Boolean``, ``hp.Float``), compiled in
the build; ``build_plain`` the same model with fixed values and no compile; ``MyHyperModel`` the
guide's "tune model training" hypermodel, whose ``fit`` tunes whether to normalize the inputs and
whether to shuffle (tuner trains with its own loop and does not call it)."""

from __future__ import annotations

from typing import Any

import numpy as np


def build_plain() -> Any:
    """A ``Sequential`` without ``keras.Input``: Keras builds it on the first batch."""
    import keras
    from keras import layers

    model = keras.Sequential()
    model.add(layers.Flatten())
    model.add(layers.Dense(units=32, activation="relu"))
    model.add(layers.Dense(10, activation="softmax"))
    return model


def build_model(hp: Any) -> Any:
    """The guide's ``build_model(hp)``."""
    import keras
    from keras import layers

    model = keras.Sequential()
    model.add(layers.Flatten())
    model.add(
        layers.Dense(
            # Tune the number of units separately.
            units=hp.Int("units", min_value=32, max_value=128, step=32),
            activation=hp.Choice("activation", ["relu", "tanh"]),
        )
    )
    if hp.Boolean("dropout"):
        model.add(layers.Dropout(rate=0.25))
    model.add(layers.Dense(10, activation="softmax"))
    learning_rate = hp.Float("lr", min_value=1e-4, max_value=1e-2, sampling="log")
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate=learning_rate),
        loss="categorical_crossentropy",
        metrics=["accuracy"],
    )
    return model


def _hypermodel_class() -> Any:
    import keras_tuner
    from keras import layers

    class MyHyperModel(keras_tuner.HyperModel):
        def build(self, hp: Any) -> Any:
            return build_model(hp)

        def fit(self, hp: Any, model: Any, x: Any, y: Any, **kwargs: Any) -> Any:
            if hp.Boolean("normalize"):
                x = layers.Normalization()(x)
            return model.fit(
                x,
                y,
                # Tune whether to shuffle the data in each epoch.
                shuffle=hp.Boolean("shuffle"),
                **kwargs,
            )

    return MyHyperModel


MyHyperModel = _hypermodel_class()


def load_data() -> tuple[np.ndarray, ...]:
    """The guide's MNIST preparation on synthetic digits: (28, 28) images in [0, 1] and one-hot
    labels, 512 to train on and 128 to validate."""
    import keras

    rng = np.random.default_rng(0)
    n = 640
    y = rng.integers(0, 10, size=n)
    x = rng.random((n, 28, 28), dtype=np.float32) * 0.5
    x[np.arange(n), 2 * y + 4, :] += 0.5
    x = x.astype("float32")
    y = keras.utils.to_categorical(y, 10)
    return x[:512], y[:512], x[512:], y[512:]
