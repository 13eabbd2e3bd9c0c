"""A TFRecord pipeline (keras-io's "Creating TFRecords" recipe, the reading half of it): examples
written once to a TFRecord file in a temporary folder, read back with ``TFRecordDataset`` ->
``parse_single_example`` -> decode; a small convnet on 16x16 grey images, integer labels. The
datasets are of unknown size: the spec gives ``train_samples`` and ``val_samples``."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

IMAGE_SIZE = 16
FEATURES = {
    "image": "bytes",  # the PNG-encoded image
    "label": "int64",
}


def create_example(image: Any, label: int) -> Any:
    import tensorflow as tf

    feature = {
        "image": tf.train.Feature(
            bytes_list=tf.train.BytesList(value=[tf.io.encode_png(image).numpy()])
        ),
        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature))


def write_records(path: Path, n: int, seed: int) -> None:
    """Write ``n`` examples once (to a temporary name, then renamed: readers never see half)."""
    import tensorflow as tf

    if path.exists():
        return
    rng = np.random.default_rng(seed)
    part = path.with_name(f"{path.name}.{os.getpid()}.part")
    with tf.io.TFRecordWriter(str(part)) as writer:
        for _ in range(n):
            label = int(rng.integers(0, 4))
            image = rng.integers(0, 128, size=(IMAGE_SIZE, IMAGE_SIZE, 1), dtype=np.uint8)
            image[label * 4 : label * 4 + 4] += 127
            writer.write(create_example(image, label).SerializeToString())
    part.replace(path)


def parse_tfrecord_fn(example: Any) -> Any:
    import tensorflow as tf

    feature_description = {
        "image": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }
    example = tf.io.parse_single_example(example, feature_description)
    image = tf.io.decode_png(example["image"], channels=1)
    image = tf.reshape(image, (IMAGE_SIZE, IMAGE_SIZE, 1))
    return tf.cast(image, tf.float32) / 255.0, example["label"]


def load_data() -> tuple[Any, Any]:
    import tensorflow as tf

    folder = Path(tempfile.gettempdir()) / "tuner-zoo-tfrecords"
    folder.mkdir(exist_ok=True)
    files = {"train": folder / "train-v1.tfrecord", "val": folder / "val-v1.tfrecord"}
    write_records(files["train"], 768, seed=0)
    write_records(files["val"], 192, seed=1)

    def read(split: str) -> Any:
        dataset = tf.data.TFRecordDataset(str(files[split]))
        return dataset.map(parse_tfrecord_fn, num_parallel_calls=tf.data.AUTOTUNE)

    return read("train"), read("val")


def build_model() -> Any:
    import keras
    from keras import layers

    return keras.Sequential(
        [
            keras.Input(shape=(IMAGE_SIZE, IMAGE_SIZE, 1)),
            layers.Conv2D(16, 3, activation="relu"),
            layers.MaxPooling2D(),
            layers.Flatten(),
            layers.Dense(4, activation="softmax"),
        ]
    )
