"""Knowledge distillation (keras-io examples/vision/knowledge_distillation, its Keras 3 form): a
``Distiller(keras.Model)`` whose own ``compile`` takes ``student_loss_fn``,
``distillation_loss_fn``, ``alpha`` and ``temperature`` besides the optimizer and metrics, passes
only those two to ``super().compile`` and keeps the rest as attributes its ``compute_loss`` reads.
The teacher and student are small convnets on MNIST-shaped synthetic digits; the teacher is not
trained first (the example trains it for epochs: it changes nothing of what tuner does here)."""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
from keras import layers, ops

NUM_CLASSES = 10


class Distiller(keras.Model):
    def __init__(self, student: Any, teacher: Any) -> None:
        super().__init__()
        self.teacher = teacher
        self.student = student

    def compile(  # type: ignore[override]
        self,
        optimizer: Any,
        metrics: Any,
        student_loss_fn: Any,
        distillation_loss_fn: Any,
        alpha: float = 0.1,
        temperature: float = 3,
    ) -> None:
        """Configure the distiller: ``alpha`` weighs the student's loss against the labels,
        ``1 - alpha`` its loss against the teacher's softened predictions."""
        super().compile(optimizer=optimizer, metrics=metrics)
        self.student_loss_fn = student_loss_fn
        self.distillation_loss_fn = distillation_loss_fn
        self.alpha = alpha
        self.temperature = temperature

    def compute_loss(
        self,
        x: Any = None,
        y: Any = None,
        y_pred: Any = None,
        sample_weight: Any = None,
        allow_empty: bool = False,
    ) -> Any:
        teacher_pred = self.teacher(x, training=False)
        student_loss = self.student_loss_fn(y, y_pred)
        distillation_loss = self.distillation_loss_fn(
            ops.softmax(teacher_pred / self.temperature, axis=1),
            ops.softmax(y_pred / self.temperature, axis=1),
        ) * (self.temperature**2)
        return self.alpha * student_loss + (1 - self.alpha) * distillation_loss

    def call(self, x: Any) -> Any:
        return self.student(x)


def _convnet(name: str, filters: int) -> Any:
    return keras.Sequential(
        [
            keras.Input(shape=(16, 16, 1)),
            layers.Conv2D(filters, (3, 3), strides=(2, 2), padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.MaxPooling2D(pool_size=(2, 2), strides=(1, 1), padding="same"),
            layers.Flatten(),
            layers.Dense(NUM_CLASSES),
        ],
        name=name,
    )


def build_model() -> Any:
    """The example's distiller compiled as the example compiles it."""
    teacher = _convnet("teacher", 16)
    student = _convnet("student", 4)
    distiller = Distiller(student=student, teacher=teacher)
    distiller.compile(
        optimizer=keras.optimizers.Adam(),
        metrics=[keras.metrics.SparseCategoricalAccuracy()],
        student_loss_fn=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        distillation_loss_fn=keras.losses.KLDivergence(),
        alpha=0.1,
        temperature=10,
    )
    return distiller


def load_data() -> tuple[np.ndarray, ...]:
    """Digits of 16 by 16 pixels (the label is the brightest of ten stripes) with integer
    labels: 512 to train on, 128 to validate."""
    rng = np.random.default_rng(0)
    n = 640
    y = rng.integers(0, NUM_CLASSES, size=n)
    x = rng.random((n, 16, 16), dtype=np.float32) * 0.5
    x[np.arange(n), :, y + 3] += 0.5
    x = np.expand_dims(x.astype("float32"), -1)
    return x[:512], y[:512], x[512:], y[512:]
