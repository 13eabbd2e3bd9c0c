"""The built-in-methods guide ("Training & evaluation with the built-in methods"): the 784 -> 64
-> 64 -> 10 classifier compiled with RMSprop and sparse categorical cross-entropy, labels of shape
``(N,)``, and a ``tf.data`` dataset of ``(x, y, sample_weight)`` that weighs class 5 twice,
shuffled and batched as the guide does."""

from __future__ import annotations

from typing import Any

import numpy as np


def get_uncompiled_model() -> Any:
    import keras
    from keras import layers

    inputs = keras.Input(shape=(784,), name="digits")
    x = layers.Dense(64, activation="relu", name="dense_1")(inputs)
    x = layers.Dense(64, activation="relu", name="dense_2")(x)
    outputs = layers.Dense(10, activation="softmax", name="predictions")(x)
    return keras.Model(inputs=inputs, outputs=outputs)


def build_model() -> Any:
    """The guide's ``get_compiled_model``."""
    import keras

    model = get_uncompiled_model()
    model.compile(
        optimizer=keras.optimizers.RMSprop(learning_rate=1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(),
        metrics=[keras.metrics.SparseCategoricalAccuracy()],
    )
    return model


def mnist_like(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Flattened 28x28 digits in [0, 1] and integer labels of shape (n,)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 10, size=n)
    x = rng.random((n, 784), dtype=np.float32) * 0.5
    x[np.arange(n), y * 70] += 1.0
    return x.astype("float32"), y.astype("float32")


def load_data() -> tuple[Any, Any]:
    import tensorflow as tf

    x_train, y_train = mnist_like(1024, seed=0)
    x_val, y_val = mnist_like(256, seed=1)
    sample_weight = np.ones(shape=(len(y_train),))
    sample_weight[y_train == 5] = 2.0
    # A Dataset that returns sample weights as its third element.
    train_dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train, sample_weight))
    train_dataset = train_dataset.shuffle(buffer_size=1024).batch(64)
    val_dataset = tf.data.Dataset.from_tensor_slices((x_val, y_val)).batch(64)
    return train_dataset, val_dataset
