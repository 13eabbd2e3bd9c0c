"""Simple MNIST convnet (keras-io examples/vision/mnist_convnet): two Conv2D/MaxPooling blocks,
Flatten, Dropout(0.5), a softmax over 10 classes, categorical cross-entropy on one-hot labels."""

from __future__ import annotations

from typing import Any

import numpy as np

NUM_CLASSES = 10
INPUT_SHAPE = (28, 28, 1)


def build_uncompiled() -> Any:
    """The example's model, left for tuner to compile with the spec's loss and optimizer."""
    import keras
    from keras import layers

    return keras.Sequential(
        [
            keras.Input(shape=INPUT_SHAPE),
            layers.Conv2D(32, kernel_size=(3, 3), activation="relu"),
            layers.MaxPooling2D(pool_size=(2, 2)),
            layers.Conv2D(64, kernel_size=(3, 3), activation="relu"),
            layers.MaxPooling2D(pool_size=(2, 2)),
            layers.Flatten(),
            layers.Dropout(0.5),
            layers.Dense(NUM_CLASSES, activation="softmax"),
        ]
    )


def build_model() -> Any:
    """The example's model compiled as the example compiles it."""
    model = build_uncompiled()
    model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
    return model


def load_data(n_train: int = 512, n_val: int = 128) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """MNIST-shaped digits: float32 images in [0, 1] with a channel axis, one-hot labels (the
    label is the brightest of ten stripes, so there is something to learn), in the form the
    example gets them from ``keras.datasets.mnist.load_data()``: ``(x_train, y_train), (x_test,
    y_test)``."""
    import keras

    rng = np.random.default_rng(0)
    n = n_train + n_val
    y = rng.integers(0, NUM_CLASSES, size=n)
    x = rng.random((n, 28, 28), dtype=np.float32) * 0.5
    for i, label in enumerate(y):
        x[i, :, 2 + 2 * label : 4 + 2 * label] += 0.5
    x = np.expand_dims(x.astype("float32"), -1)  # images of shape (28, 28, 1)
    y = keras.utils.to_categorical(y, NUM_CLASSES)
    return (x[:n_train], y[:n_train]), (x[n_train:], y[n_train:])
