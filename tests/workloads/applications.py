"""``keras.applications`` models from scratch (``weights=None``) at a small input size:
MobileNetV2 and ResNet50 on 32x32 RGB images, 10 classes, integer labels."""

from __future__ import annotations

from typing import Any

import numpy as np

INPUT_SHAPE = (32, 32, 3)


def mobilenet_v2() -> Any:
    import keras

    return keras.applications.MobileNetV2(weights=None, input_shape=INPUT_SHAPE, classes=10)


def resnet50() -> Any:
    import keras

    return keras.applications.ResNet50(weights=None, input_shape=INPUT_SHAPE, classes=10)


def load_data() -> tuple[np.ndarray, ...]:
    """CIFAR-10-shaped images: uint8 pixels scaled to [0, 1], integer labels; 64 to train on
    and 32 to validate (two steps and one at the batch of 32: building and tracing the model,
    not the steps, is what these setups test and what they cost)."""
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, size=(96, *INPUT_SHAPE), dtype=np.uint8).astype("float32") / 255.0
    y = rng.integers(0, 10, size=(96, 1))
    return x[:64], y[:64], x[64:], y[64:]
