"""Models for ``tuner validate`` written the way Keras's own examples write them, each a
``build_model``/``load_data`` pair with small synthetic data of the right shapes:

* :func:`mnist_convnet` — keras-io ``examples/vision/mnist_convnet.py``: two Conv2D/MaxPooling2D
  blocks, ``Flatten``, ``Dropout(0.5)``, a softmax ``Dense``; categorical cross-entropy, Adam;
* :func:`guide_custom_model` — "Customizing what happens in fit()" (TensorFlow): a ``keras.Model``
  whose ``train_step`` computes ``self.compute_loss`` under a ``GradientTape``, applies the
  gradients and logs that loss through the ``loss`` metric;
* :func:`augmented_convnet` — the convnet behind Keras's image augmentation layers
  (``RandomFlip``, ``RandomRotation``), with ``BatchNormalization`` and ``SpatialDropout2D``.
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
from keras import layers

NUM_CLASSES = 10
INPUT_SHAPE = (28, 28, 1)


def mnist_convnet() -> Any:
    """The MNIST convnet as keras-io writes it (uncompiled: the spec compiles it), the zoo's."""
    from workloads.mnist_convnet import build_uncompiled

    return build_uncompiled()


def mnist_data() -> tuple[np.ndarray, ...]:
    """Images scaled to [0, 1] with a channel axis, labels one-hot, as the example prepares
    them: 2,048 training and 256 test images. Each label is a fixed function of its image (the
    brightest of ten horizontal bands), so that, as on MNIST, the gradients carry signal: on
    random labels a model sits at chance, its gradients cancel down to rounding noise, and two
    right runs drift apart within tens of steps."""
    rng = np.random.default_rng(0)
    x = rng.random((2048 + 256, *INPUT_SHAPE), dtype=np.float32)
    bands = x[:, :20, :, 0].reshape(len(x), NUM_CLASSES, -1).mean(axis=2)
    y = keras.utils.to_categorical(bands.argmax(axis=1), NUM_CLASSES)
    return x[:2048], y[:2048], x[2048:], y[2048:]


def guide_custom_model() -> Any:
    """The guide's first ``CustomModel``, compiled as the guide compiles it: the zoo's (imported
    here, where it is asked for, since that module imports TensorFlow)."""
    from workloads.custom_train_step import build_model

    return build_model()


def guide_data() -> tuple[np.ndarray, ...]:
    """``np.random.random`` inputs and targets as the guide makes them (1000 samples), plus a
    held-out 200."""
    rng = np.random.default_rng(1)
    x, y = rng.random((1200, 32), dtype=np.float32), rng.random((1200, 1), dtype=np.float32)
    return x[:1000], y[:1000], x[1000:], y[1000:]


def augmented_convnet() -> Any:
    """A small convnet with Keras's augmentation layers in front, BatchNorm and spatial
    dropout."""
    inputs = keras.Input(shape=INPUT_SHAPE)
    x = layers.RandomFlip("horizontal")(inputs)
    x = layers.RandomRotation(0.1)(x)
    x = layers.Conv2D(16, 3, activation="relu")(x)
    x = layers.BatchNormalization()(x)
    x = layers.SpatialDropout2D(0.2)(x)
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.GaussianNoise(0.1)(x)
    outputs = layers.Dense(NUM_CLASSES, activation="softmax")(x)
    return keras.Model(inputs, outputs)


def twenty_features() -> Any:
    """A model that expects 20 features: fed :func:`guide_data`'s 32, Keras refuses the shape."""
    return keras.Sequential([keras.Input(shape=(20,)), layers.Dense(1)])
