"""The functional-API guide's ticket model: three inputs (title and body word ids, a binary tag
vector) and two outputs (a priority score and a department), compiled in the build with a loss
dict and loss weights; the data are ``tf.data`` datasets of dict inputs and dict targets."""

from __future__ import annotations

from typing import Any

import numpy as np

NUM_TAGS = 12
NUM_WORDS = 1000
NUM_DEPARTMENTS = 4
TITLE_LENGTH = 10
BODY_LENGTH = 20


def build_model() -> Any:
    import keras
    from keras import layers

    title_input = keras.Input(shape=(None,), name="title")  # variable-length sequence of ints
    body_input = keras.Input(shape=(None,), name="body")
    tags_input = keras.Input(shape=(NUM_TAGS,), name="tags")  # binary vectors

    # Embed each word of the title and of the body, then reduce each sequence to one vector.
    title_features = layers.Embedding(NUM_WORDS, 64)(title_input)
    body_features = layers.Embedding(NUM_WORDS, 64)(body_input)
    title_features = layers.LSTM(32)(title_features)
    body_features = layers.LSTM(16)(body_features)

    x = layers.concatenate([title_features, body_features, tags_input])
    priority_pred = layers.Dense(1, name="priority")(x)
    department_pred = layers.Dense(NUM_DEPARTMENTS, name="department")(x)

    model = keras.Model(
        inputs=[title_input, body_input, tags_input],
        outputs={"priority": priority_pred, "department": department_pred},
    )
    model.compile(
        optimizer=keras.optimizers.RMSprop(1e-3),
        loss={
            "priority": keras.losses.BinaryCrossentropy(from_logits=True),
            "department": keras.losses.CategoricalCrossentropy(from_logits=True),
        },
        loss_weights={"priority": 1.0, "department": 0.2},
    )
    return model


def make_arrays(n: int, seed: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Dummy input data and targets as the guide makes them: ({title, body, tags}, {priority,
    department})."""
    rng = np.random.default_rng(seed)
    inputs = {
        "title": rng.integers(NUM_WORDS, size=(n, TITLE_LENGTH)),
        "body": rng.integers(NUM_WORDS, size=(n, BODY_LENGTH)),
        "tags": rng.integers(2, size=(n, NUM_TAGS)).astype("float32"),
    }
    targets = {
        "priority": rng.random(size=(n, 1)).astype("float32"),
        "department": rng.integers(2, size=(n, NUM_DEPARTMENTS)).astype("float32"),
    }
    return inputs, targets


def load_data() -> tuple[Any, Any]:
    """(train, val) ``tf.data`` datasets of ({title, body, tags}, {priority, department})."""
    import tensorflow as tf

    train = tf.data.Dataset.from_tensor_slices(make_arrays(512, seed=0))
    val = tf.data.Dataset.from_tensor_slices(make_arrays(128, seed=1))
    return train, val
