"""A TFRecord workload: the built-in regression's data as ``tf.train.Example`` records written
into the cache on first use, read unbatched with a parse function (tuner batches them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tuner.workloads import generated
from tuner.workloads.regression import N_FEATURES, make_data
from tuner.workloads.regression import build_model as regression_model

N_TRAIN = 8_192
N_VAL = 1_024


def build_model() -> Any:
    """The built-in regression model (10 -> 64 -> 32 -> 1)."""
    return regression_model()


def load_data() -> tuple[Any, Any]:
    """``(train, val)`` datasets parsed from the TFRecord files."""
    import tensorflow as tf

    folder = generated("records-v1", _write_records)
    features = {
        "x": tf.io.FixedLenFeature([N_FEATURES], tf.float32),
        "y": tf.io.FixedLenFeature([1], tf.float32),
    }

    def parse(record: Any) -> Any:
        example = tf.io.parse_single_example(record, features)
        return example["x"], example["y"]

    def normalise(x: Any, y: Any) -> Any:
        return (x - 0.5) * 2.0, y

    def read(split: str) -> Any:
        data = tf.data.TFRecordDataset(str(folder / f"{split}.tfrecord"))
        return data.map(parse, num_parallel_calls=tf.data.AUTOTUNE).map(normalise)

    return read("train"), read("val")


def _write_records(folder: Path) -> None:
    import tensorflow as tf

    x_train, y_train, x_val, y_val = make_data(N_TRAIN, N_VAL, seed=1)
    for split, xs, ys in (("train", x_train, y_train), ("val", x_val, y_val)):
        with tf.io.TFRecordWriter(str(folder / f"{split}.tfrecord")) as writer:
            for x, y in zip(xs, ys, strict=True):
                feature = {
                    key: tf.train.Feature(float_list=tf.train.FloatList(value=value))
                    for key, value in (("x", x), ("y", y))
                }
                example = tf.train.Example(features=tf.train.Features(feature=feature))
                writer.write(example.SerializeToString())
