"""Workloads written the way Keras's examples write them (issue 28), small and synthetic: the
functional-API guide's dict inputs and outputs as arrays, and the text-classification example's
end-to-end model on raw strings (``keras.Input(dtype="string")`` and a ``TextVectorization``
adapted in the build). Importable by a trial child as ``e2e.keras_forms`` (tests/ is on its
``PYTHONPATH``)."""

from __future__ import annotations

from typing import Any

import numpy as np

WORDS = np.array(["good", "great", "fine", "bad", "awful", "poor", "film", "plot", "the", "a"])


def dict_arrays_model() -> Any:
    """Two named inputs, ``title`` and ``body``, one named output, ``priority`` (as the
    functional-API guide names them)."""
    import keras

    title = keras.Input(shape=(8,), name="title")
    body = keras.Input(shape=(16,), name="body")
    features = keras.layers.concatenate(
        [keras.layers.Dense(16, activation="relu")(title), keras.layers.Dense(16)(body)]
    )
    priority = keras.layers.Dense(1, name="priority")(features)
    return keras.Model(inputs={"title": title, "body": body}, outputs={"priority": priority})


def dict_arrays_data() -> tuple[Any, ...]:
    """``({"title": a, "body": b}, {"priority": c}, x_val, y_val)``: dicts of arrays, as
    ``model.fit`` takes them (1,024 training, 256 validation samples)."""
    rng = np.random.default_rng(0)

    def split(n: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        title = rng.normal(size=(n, 8)).astype(np.float32)
        body = rng.normal(size=(n, 16)).astype(np.float32)
        return {"title": title, "body": body}, {"priority": title[:, :1] + body[:, :1]}

    return (*split(1024), *split(256))


def _sentences(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` short reviews and their labels: 1 when the first word is a good one."""
    rng = np.random.default_rng(seed)
    words = rng.choice(WORDS, size=(n, 6))
    text = np.array([" ".join(row) for row in words])
    labels = np.isin(words[:, 0], WORDS[:3]).astype(np.float32)
    return text, labels


def text_model() -> Any:
    """The example's end-to-end model: raw strings in, ``TextVectorization`` (adapted here, in
    the build) to token ids, an embedding, pooling, a sigmoid out."""
    import keras

    vectorize = keras.layers.TextVectorization(
        max_tokens=32, output_mode="int", output_sequence_length=6
    )
    vectorize.adapt(_sentences(256, 7)[0])
    inputs = keras.Input(shape=(), dtype="string")
    x = keras.layers.Embedding(33, 8)(vectorize(inputs))
    x = keras.layers.GlobalAveragePooling1D()(x)
    return keras.Model(inputs, keras.layers.Dense(1, activation="sigmoid")(x))


def text_arrays() -> tuple[np.ndarray, ...]:
    """String arrays and float labels (512 training, 128 validation reviews)."""
    return (*_sentences(512, 0), *_sentences(128, 1))


def text_datasets() -> tuple[Any, Any]:
    """The same reviews as unbatched ``tf.data`` datasets of ``(string, label)``."""
    import tensorflow as tf

    x, y, xv, yv = text_arrays()
    return tf.data.Dataset.from_tensor_slices((x, y)), tf.data.Dataset.from_tensor_slices((xv, yv))


def ten_features_model() -> Any:
    """A ``Sequential`` expecting 10 features."""
    import keras

    return keras.Sequential([keras.Input((10,)), keras.layers.Dense(8), keras.layers.Dense(1)])


def twenty_features_data() -> tuple[np.ndarray, ...]:
    """20 features: one model of 10 cannot take them."""
    rng = np.random.default_rng(0)
    x = rng.random((640, 20), dtype=np.float32)
    return x[:512], x[:512, :1], x[512:], x[512:, :1]


def ragged_model() -> Any:
    """Token ids of varying length in (``keras.Input(ragged=True)``), embedded and averaged."""
    import keras

    inputs = keras.Input(shape=(None,), ragged=True, dtype="int64")
    x = keras.layers.Embedding(20, 4)(inputs)
    x = keras.layers.Lambda(lambda t: t.to_tensor(), output_shape=(None, 4))(x)
    x = keras.layers.GlobalAveragePooling1D()(x)
    return keras.Model(inputs, keras.layers.Dense(1)(x))


def ragged_datasets() -> tuple[Any, Any]:
    """``(ragged token ids, length)`` datasets (512 training, 128 validation rows)."""
    import tensorflow as tf

    rng = np.random.default_rng(0)

    def make(n: int) -> Any:
        rows = [rng.integers(1, 20, size=rng.integers(1, 6)).tolist() for _ in range(n)]
        lengths = np.array([[len(row)] for row in rows], np.float32)
        return tf.data.Dataset.from_tensor_slices((tf.ragged.constant(rows), lengths))

    return make(512), make(128)


def one_device_model() -> Any:
    """A layer written for one device, which refuses to run under a ``tf.distribute`` strategy:
    the workload check (one device, no strategy) passes it; every trial fails the same way."""
    import keras
    import tensorflow as tf

    class OneDeviceOnly(keras.layers.Layer):
        def call(self, x: Any) -> Any:
            if tf.distribute.has_strategy():
                raise ValueError("OneDeviceOnly was written for one device")
            return x

    inputs = keras.Input(shape=(10,))
    return keras.Model(inputs, keras.layers.Dense(1)(OneDeviceOnly()(inputs)))


def ten_features_data() -> tuple[np.ndarray, ...]:
    """10 features, one target: 512 training and 128 validation rows."""
    rng = np.random.default_rng(0)
    x = rng.random((640, 10), dtype=np.float32)
    return x[:512], x[:512, :1], x[512:], x[512:, :1]
