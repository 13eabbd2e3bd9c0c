"""Structured data classification from scratch (keras-io examples/structured_data, the version with
preprocessing layers): one ``keras.Input`` per column, ``Normalization`` and ``IntegerLookup``
adapted in the build on the training dataset, BatchNormalization, Dropout, a sigmoid output of
shape (N, 1) against labels of shape (N,); the data a ``tf.data`` dataset of (dict of columns,
label), shuffled and batched by 32 as the example does. The example's string column (``thal``,
``StringLookup``) is left out: Keras 3.15 on TensorFlow 2.21 cannot ``fit`` a model with a string
input under ``MirroredStrategy`` (``InvalidArgumentError`` from an ``AddN`` of strings), plain
Keras included; ``text_classification.build_end_to_end`` keeps a string input in the zoo."""

from __future__ import annotations

from typing import Any

import numpy as np

NUMERICAL = ("age", "trestbps", "chol", "thalach", "oldpeak")


def heart_frame(n: int, seed: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Columns like the Cleveland heart-disease CSV's, and the ``target`` column."""
    rng = np.random.default_rng(seed)
    frame = {
        "age": rng.integers(29, 78, size=n).astype("float32"),
        "sex": rng.integers(0, 2, size=n).astype("int64"),
        "trestbps": rng.normal(131, 17, size=n).astype("float32"),
        "chol": rng.normal(246, 51, size=n).astype("float32"),
        "thalach": rng.normal(150, 23, size=n).astype("float32"),
        "oldpeak": rng.exponential(1.0, size=n).astype("float32"),
        "ca": rng.integers(0, 4, size=n).astype("int64"),
    }
    risk = (frame["age"] - 54) / 9 + (frame["ca"] > 1) - (frame["thalach"] - 150) / 23
    target = (risk + rng.normal(0, 0.5, size=n) > 0).astype("int64")
    return frame, target


def dataframe_to_dataset(frame: dict[str, np.ndarray], labels: np.ndarray) -> Any:
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices((dict(frame), labels))
    return ds.shuffle(buffer_size=len(labels), seed=0)


def encode_numerical_feature(feature: Any, name: str, dataset: Any) -> Any:
    import tensorflow as tf
    from keras.layers import Normalization

    normalizer = Normalization()
    # Prepare a Dataset that only yields our feature, and learn its statistics.
    feature_ds = dataset.map(lambda x, y: x[name])
    feature_ds = feature_ds.map(lambda x: tf.expand_dims(x, -1))
    normalizer.adapt(feature_ds)
    return normalizer(feature)


def encode_categorical_feature(feature: Any, name: str, dataset: Any) -> Any:
    import tensorflow as tf
    from keras.layers import IntegerLookup

    lookup = IntegerLookup(output_mode="one_hot")
    # Prepare a Dataset that only yields our feature, and learn the set of possible values.
    feature_ds = dataset.map(lambda x, y: x[name])
    feature_ds = feature_ds.map(lambda x: tf.expand_dims(x, -1))
    lookup.adapt(feature_ds)
    return lookup(feature)


def build_model() -> Any:
    import keras
    from keras import layers

    train_ds = dataframe_to_dataset(*heart_frame(768, seed=0)).batch(32)

    # Categorical features encoded as integers
    sex = keras.Input(shape=(1,), name="sex", dtype="int64")
    ca = keras.Input(shape=(1,), name="ca", dtype="int64")
    numerical = {name: keras.Input(shape=(1,), name=name) for name in NUMERICAL}
    all_inputs = [sex, ca, *numerical.values()]

    encoded = [
        encode_categorical_feature(sex, "sex", train_ds),
        encode_categorical_feature(ca, "ca", train_ds),
    ]
    encoded += [encode_numerical_feature(numerical[n], n, train_ds) for n in NUMERICAL]
    all_features = layers.concatenate(encoded)
    x = layers.Dense(32)(all_features)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)
    x = layers.Dropout(0.5)(x)
    output = layers.Dense(1, activation="sigmoid")(x)
    model = keras.Model(all_inputs, output)
    model.compile("adam", "binary_crossentropy", metrics=["accuracy"])
    return model


def load_data() -> tuple[Any, Any]:
    train_ds = dataframe_to_dataset(*heart_frame(768, seed=0)).batch(32)
    val_ds = dataframe_to_dataset(*heart_frame(192, seed=1)).batch(32)
    return train_ds, val_ds
