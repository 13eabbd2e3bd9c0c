"""Text classification from scratch (keras-io examples/nlp/text_classification_from_scratch): the
example's ``TextVectorization`` (its custom standardization) and its model (Embedding, Dropout, two
strided Conv1D, GlobalMaxPooling1D, Dense, a sigmoid), compiled in the build.

``build_model`` + ``load_data`` train as the example trains: on word indices, the texts vectorized
in the ``tf.data`` pipeline. ``build_end_to_end`` + ``raw_datasets`` train the example's end-to-end
model (``keras.Input(dtype="string")`` -> ``TextVectorization`` adapted in the build -> the model)
on raw strings."""

from __future__ import annotations

import re
import string
from typing import Any

import numpy as np

MAX_FEATURES = 2000
EMBEDDING_DIM = 32
SEQUENCE_LENGTH = 64

GOOD = ["great", "wonderful", "moving", "superb", "funny", "brilliant", "charming"]
BAD = ["boring", "awful", "dull", "clumsy", "tedious", "weak", "predictable"]
FILLER = ["the", "film", "plot", "actor", "scene", "was", "and", "a", "story", "music", "it"]


def reviews(n: int, seed: int) -> tuple[list[str], np.ndarray]:
    """Synthetic movie reviews with HTML line breaks (as IMDB's) and binary labels."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, size=n)
    texts = []
    for label in labels:
        words = list(rng.choice(FILLER, size=20))
        words += list(rng.choice(GOOD if label else BAD, size=3))
        rng.shuffle(words)
        texts.append(" ".join(words[:12]) + "<br /><br />" + " ".join(words[12:]) + ".")
    return texts, labels.astype("float32")


def custom_standardization(input_data: Any) -> Any:
    """Lowercase, strip the ``<br />`` tags, remove punctuation (the example's)."""
    import tensorflow as tf

    lowercase = tf.strings.lower(input_data)
    stripped_html = tf.strings.regex_replace(lowercase, "<br />", " ")
    return tf.strings.regex_replace(stripped_html, f"[{re.escape(string.punctuation)}]", "")


def make_vectorize_layer() -> Any:
    """The example's ``TextVectorization``, adapted on the training texts."""
    from keras import layers

    vectorize_layer = layers.TextVectorization(
        standardize=custom_standardization,
        max_tokens=MAX_FEATURES,
        output_mode="int",
        output_sequence_length=SEQUENCE_LENGTH,
    )
    texts, _ = reviews(512, seed=0)
    vectorize_layer.adapt(texts)
    return vectorize_layer


def build_model() -> Any:
    """The example's model on word indices (an integer input), compiled as the example does."""
    import keras
    from keras import layers

    # A integer input for vocab indices.
    inputs = keras.Input(shape=(None,), dtype="int64")
    # Next, we add a layer to map those vocab indices into a space of dimensionality
    # 'embedding_dim'.
    x = layers.Embedding(MAX_FEATURES, EMBEDDING_DIM)(inputs)
    x = layers.Dropout(0.5)(x)
    # Conv1D + global max pooling
    x = layers.Conv1D(32, 7, padding="valid", activation="relu", strides=3)(x)
    x = layers.Conv1D(32, 7, padding="valid", activation="relu", strides=3)(x)
    x = layers.GlobalMaxPooling1D()(x)
    # We add a vanilla hidden layer:
    x = layers.Dense(32, activation="relu")(x)
    x = layers.Dropout(0.5)(x)
    # We project onto a single unit output layer, and squash it with a sigmoid:
    predictions = layers.Dense(1, activation="sigmoid", name="predictions")(x)
    model = keras.Model(inputs, predictions)
    # Compile the model with binary crossentropy loss and an adam optimizer.
    model.compile(loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"])
    return model


def build_end_to_end() -> Any:
    """The example's end-to-end model: a string input, ``TextVectorization`` adapted in the
    build, then the model; trained here on raw strings (the example only predicts with it)."""
    import keras

    vectorize_layer = make_vectorize_layer()
    inputs = keras.Input(shape=(1,), dtype="string")
    indices = vectorize_layer(inputs)
    outputs = build_model()(indices)
    end_to_end_model = keras.Model(inputs, outputs)
    end_to_end_model.compile(loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"])
    return end_to_end_model


def raw_datasets() -> tuple[Any, Any]:
    """(train, val) ``tf.data`` datasets of (raw text, label), as ``text_dataset_from_directory``
    yields them (unbatched here; its batches of 32 would be rebatched)."""
    import tensorflow as tf

    train = tf.data.Dataset.from_tensor_slices(reviews(512, seed=0))
    val = tf.data.Dataset.from_tensor_slices(reviews(128, seed=1))
    return train, val


def load_data() -> tuple[Any, Any]:
    """The example's training data: the raw texts vectorized in the ``tf.data`` pipeline."""
    import tensorflow as tf

    vectorize_layer = make_vectorize_layer()

    def vectorize_text(text: Any, label: Any) -> Any:
        text = tf.expand_dims(text, -1)
        return vectorize_layer(text), label

    train, val = raw_datasets()  # batched by 32 as text_dataset_from_directory batches
    return train.batch(32).map(vectorize_text), val.batch(32).map(vectorize_text)
