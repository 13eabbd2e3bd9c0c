"""MNIST as in the data-parallel article: 784 -> 64 (relu) -> 10 (softmax), on the real MNIST
(downloaded: it needs the internet) as arrays or as the article's ``tf.data`` pipeline, or on
generated data of the same shape, offline."""

from __future__ import annotations

from typing import Any

import numpy as np

N_FEATURES = 784
N_CLASSES = 10


def build_model() -> Any:
    """Return the uncompiled 784 -> 64 -> 10 softmax classifier."""
    import keras

    return keras.Sequential(
        [
            keras.Input(shape=(N_FEATURES,)),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(N_CLASSES, activation="softmax"),
        ],
        name="mnist",
    )


def load_data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Real MNIST, flattened to 784 features scaled to [0, 1]."""
    import keras

    (x_train, y_train), (x_test, y_test) = keras.datasets.mnist.load_data()
    x_train = x_train.reshape(-1, N_FEATURES).astype(np.float32) / 255.0
    x_test = x_test.reshape(-1, N_FEATURES).astype(np.float32) / 255.0
    return x_train, y_train.astype(np.int64), x_test, y_test.astype(np.int64)


def load_datasets() -> tuple[Any, Any]:
    """The article's pipeline, ``shuffle(len) -> batch(32)`` (tuner rebatches it); the test split
    validates."""
    import tensorflow as tf

    x_train, y_train, x_test, y_test = load_data()
    train = tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(len(x_train)).batch(32)
    val = tf.data.Dataset.from_tensor_slices((x_test, y_test)).batch(32)
    return train, val


def load_synthetic_data(
    n_train: int = 16_384, n_val: int = 2_048, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Generated MNIST-shaped data: each class a random template plus noise, clipped to [0, 1]."""
    rng = np.random.default_rng(seed)
    templates = rng.random((N_CLASSES, N_FEATURES), dtype=np.float32)
    labels = rng.integers(0, N_CLASSES, size=n_train + n_val)
    noise = rng.normal(scale=0.35, size=(n_train + n_val, N_FEATURES)).astype(np.float32)
    x = np.clip(templates[labels] + noise, 0.0, 1.0).astype(np.float32)
    y = labels.astype(np.int64)
    return x[:n_train], y[:n_train], x[n_train:], y[n_train:]
