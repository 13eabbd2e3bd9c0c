"""A small convnet on generated 32x32 RGB images: the GPU check's workload (benchmarks/gpu).

Its activations (about 0.6 MB a sample in float32) put a capped GPU's out-of-memory boundary
inside the batch range a search covers (``benchmarks/gpu/README.md`` gives the arithmetic). The
data are generated with NumPy from a seed, in every process alike, without TensorFlow or files;
the label is learnt from the whole picture (the validation loss falls below ln 10 within a few
hundred steps). The ``small`` functions train in seconds on a CPU (smoke tests).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

SIZE = 32
CHANNELS = 3
CLASSES = 10
WIDTHS = (64, 128, 256)
SMALL_WIDTHS = (8, 16, 32)
N_TRAIN = 16_384
N_VAL = 2_048
N_SMALL_TRAIN = 1_024
N_SMALL_VAL = 256
NOISE = 48.0
"""Pixel noise (standard deviation, 0-255 scale): larger than two prototypes differ at most
pixels, so a class is told from the whole picture, not from one pixel."""


def build_model(widths: Sequence[int] = WIDTHS) -> Any:
    """The uncompiled convnet, one Conv2D block per width, on 32x32x3 images in 0-255."""
    import keras

    layers: list[Any] = [keras.Input(shape=(SIZE, SIZE, CHANNELS)), keras.layers.Rescaling(1 / 255)]
    for width in widths:
        layers.append(keras.layers.Conv2D(width, 3, padding="same", activation="relu"))
        layers.append(keras.layers.MaxPooling2D())
    layers.append(keras.layers.GlobalAveragePooling2D())
    # Softmax in float32 under mixed precision, as Keras's mixed-precision guide advises.
    layers.append(keras.layers.Dense(CLASSES, activation="softmax", dtype="float32"))
    return keras.Sequential(layers, name="convnet")


def build_small_model() -> Any:
    """The same architecture with 8/16/32 filters: trains in seconds on a CPU."""
    return build_model(SMALL_WIDTHS)


def make_data(
    n_train: int = N_TRAIN, n_val: int = N_VAL, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(x_train, y_train, x_val, y_val)`` from ``seed``: ``uint8`` images, balanced labels."""
    rng = np.random.default_rng(seed)
    prototypes = _prototypes(rng)
    total = n_train + n_val
    labels = (np.arange(total) % CLASSES).astype(np.int32)
    rng.shuffle(labels)
    brightness = rng.uniform(-30.0, 30.0, size=(total, 1, 1, 1)).astype(np.float32)
    noise = rng.normal(0.0, NOISE, size=(total, SIZE, SIZE, CHANNELS)).astype(np.float32)
    images = prototypes[labels] + brightness + noise
    x = np.clip(images, 0, 255).astype(np.uint8)
    return x[:n_train], labels[:n_train], x[n_train:], labels[n_train:]


def load_data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """16,384 training and 2,048 validation images, or the environment's sizes."""
    n_train = int(os.environ.get("TUNER_CONVNET_TRAIN", N_TRAIN))
    n_val = int(os.environ.get("TUNER_CONVNET_VAL", N_VAL))
    return make_data(n_train, n_val)


def load_small_data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """1,024 training and 256 validation images (smoke tests on a CPU)."""
    return make_data(N_SMALL_TRAIN, N_SMALL_VAL)


def _prototypes(rng: np.random.Generator) -> np.ndarray:
    """One smooth 32x32x3 pattern per class (0-255 scale, float32): a random mean colour plus a
    sinusoidal grating of a random orientation, frequency and phase per channel."""
    rows, cols = np.mgrid[0:SIZE, 0:SIZE].astype(np.float32) / SIZE
    patterns = np.empty((CLASSES, SIZE, SIZE, CHANNELS), np.float32)
    for label in range(CLASSES):
        colour = rng.uniform(70.0, 185.0, size=CHANNELS)
        for channel in range(CHANNELS):
            angle = rng.uniform(0.0, np.pi)
            frequency = rng.uniform(1.0, 4.0)
            phase = rng.uniform(0.0, 2 * np.pi)
            wave = np.sin(
                2 * np.pi * frequency * (rows * np.cos(angle) + cols * np.sin(angle)) + phase
            )
            patterns[label, :, :, channel] = colour[channel] + 40.0 * wave
    return patterns
