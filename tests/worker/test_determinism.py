"""The parity pass's deterministic state (:mod:`tuner.worker.determinism`): every stochastic
layer of a model written as Keras's examples write it is switched off in the narrowest way, the
rest of training untouched, and the report says which layers and how."""

from __future__ import annotations

import keras
import numpy as np
from validate_workloads import augmented_convnet, mnist_convnet

from tuner.worker.determinism import describe, make_deterministic


def _twice(model: keras.Model, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    first = keras.ops.convert_to_numpy(model(x, training=True))
    return first, keras.ops.convert_to_numpy(model(x, training=True))


def test_the_mnist_convnets_dropout_gets_rate_0_and_training_is_deterministic() -> None:
    model = mnist_convnet()
    x = np.random.default_rng(0).random((8, 28, 28, 1), dtype=np.float32)
    before = _twice(model, x)
    assert not np.array_equal(*before)  # Dropout(0.5) draws a new mask each call
    lines = describe(make_deterministic(model))
    assert lines == ["Dropout(0.5): rate 0 for the parity pass"]
    assert np.array_equal(*_twice(model, x))


def test_augmentation_goes_to_inference_mode_and_batchnorm_still_trains() -> None:
    model = augmented_convnet()
    lines = describe(make_deterministic(model))
    assert "RandomFlip: inference mode (training=False) for the parity pass" in lines
    assert "RandomRotation: inference mode (training=False) for the parity pass" in lines
    assert "SpatialDropout2D(0.2): rate 0 for the parity pass" in lines
    assert "GaussianNoise(0.1): stddev 0 for the parity pass" in lines
    x = np.random.default_rng(1).random((8, 28, 28, 1), dtype=np.float32)
    assert np.array_equal(*_twice(model, x))
    (norm,) = [
        layer for layer in model.layers if isinstance(layer, keras.layers.BatchNormalization)
    ]
    mean = keras.ops.convert_to_numpy(norm.moving_mean).copy()
    model(x, training=True)
    assert not np.array_equal(mean, keras.ops.convert_to_numpy(norm.moving_mean))  # it trains
    if keras.backend.backend() == "tensorflow":
        assert norm.synchronized
        assert any(line.startswith("BatchNormalization: synchronized") for line in lines)


def test_equal_layers_are_counted_and_rnn_dropout_is_zeroed() -> None:
    model = keras.Sequential(
        [
            keras.Input((5, 3)),
            keras.layers.LSTM(4, dropout=0.2, recurrent_dropout=0.1),
            keras.layers.Dropout(0.5),
            keras.layers.Dense(4),
            keras.layers.Dropout(0.5),
        ]
    )
    lines = describe(make_deterministic(model))
    assert "Dropout(0.5) x2: rate 0 for the parity pass" in lines
    assert (
        "LSTMCell(dropout=0.2, recurrent_dropout=0.1): dropout and recurrent_dropout 0 for the "
        "parity pass"
    ) in lines


def test_a_model_without_randomness_is_left_alone() -> None:
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dropout(0.0), keras.layers.Dense(1)])
    assert describe(make_deterministic(model)) == []
