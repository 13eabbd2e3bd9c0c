"""A small convnet on PNG files (generated into the cache on first use: four classes of stripe
patterns), read as most image pipelines start: ``image_dataset_from_directory`` in batches of 32,
an augmentation ``map``, ``prefetch``; tuner rebatches them to each trial's global batch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tuner.workloads import generated

SIZE = 32
CLASSES = ("diagonal", "horizontal", "dots", "vertical")
N_TRAIN_PER_CLASS = 400
N_VAL_PER_CLASS = 64


def build_model() -> Any:
    """Return an uncompiled two-block convnet for 32x32 RGB images in [0, 1], 4 classes."""
    import keras

    return keras.Sequential(
        [
            keras.Input(shape=(SIZE, SIZE, 3)),
            keras.layers.Conv2D(16, 3, activation="relu", padding="same"),
            keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(32, 3, activation="relu", padding="same"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(len(CLASSES), activation="softmax"),
        ],
        name="images",
    )


def load_data() -> tuple[Any, Any]:
    """``(train, val)`` as the user would write them: a folder of PNGs per split."""
    import keras
    import tensorflow as tf

    root = generated("images-v1", _write_images)

    def read(split: str, shuffle: bool) -> Any:
        return keras.utils.image_dataset_from_directory(
            root / split,
            image_size=(SIZE, SIZE),
            batch_size=32,
            shuffle=shuffle,
            seed=0,
            verbose=False,
        )

    def augment(images: Any, labels: Any) -> Any:
        return tf.image.random_flip_left_right(images) / 255.0, labels

    def rescale(images: Any, labels: Any) -> Any:
        return images / 255.0, labels

    train = read("train", True).map(augment, num_parallel_calls=tf.data.AUTOTUNE)
    val = read("val", False).map(rescale)
    return train.prefetch(tf.data.AUTOTUNE), val.prefetch(tf.data.AUTOTUNE)


def _write_images(folder: Path) -> None:
    import tensorflow as tf

    rng = np.random.default_rng(0)
    for split, count in (("train", N_TRAIN_PER_CLASS), ("val", N_VAL_PER_CLASS)):
        for label, name in enumerate(CLASSES):
            (folder / split / name).mkdir(parents=True)
            for i in range(count):
                pixels = _picture(label, rng)
                png = tf.io.encode_png(pixels).numpy()
                (folder / split / name / f"{i:04d}.png").write_bytes(png)


def _picture(label: int, rng: np.random.Generator) -> np.ndarray:
    rows, cols = np.mgrid[0:SIZE, 0:SIZE]
    phase = rng.integers(0, 8)
    pattern = [
        (rows + cols + phase) % 8 < 4,
        (rows + phase) % 8 < 4,
        ((rows + phase) % 8 < 4) & ((cols + phase) % 8 < 4),
        (cols + phase) % 8 < 4,
    ][label]
    colour = np.array([[200, 60, 60], [60, 200, 60], [60, 60, 200], [200, 200, 60]][label])
    image = pattern[..., None] * colour + rng.normal(0, 40, (SIZE, SIZE, 3))
    return np.clip(image, 0, 255).astype(np.uint8)
