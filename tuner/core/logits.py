"""Whether a probabilistic loss is given probabilities: the workload check's warning (pure; the
child computes the model's outputs). Given logits, Keras's crossentropy losses clip them into
(0, 1) and train on a wrong loss without a word.
"""

from __future__ import annotations

from typing import Any

import numpy as np

PROBABILISTIC_LOSSES = {
    "binary_crossentropy": "BinaryCrossentropy",
    "categorical_crossentropy": "CategoricalCrossentropy",
    "sparse_categorical_crossentropy": "SparseCategoricalCrossentropy",
}
"""The Keras losses that expect probabilities, with the class that says ``from_logits``."""

RANGE_SLACK = 1e-5
"""How far outside [0, 1] a probability may read (a float32 softmax or sigmoid's rounding)."""
SUM_TOLERANCE = 1e-2
"""How far from 1 a row of class probabilities may sum (rounding, a reduced-precision softmax)."""


def not_probabilities(function: str, outputs: Any) -> str | None:
    """Why the model's ``outputs`` are not the probabilities the loss ``function`` expects, in a
    few words (values outside [0, 1]; categorical rows not summing to 1), or ``None``; empty or
    non-finite outputs are left to other checks."""
    values = np.asarray(outputs, dtype=np.float64)
    if values.size == 0 or not np.all(np.isfinite(values)):
        return None
    low, high = float(values.min()), float(values.max())
    if low < -RANGE_SLACK or high > 1 + RANGE_SLACK:
        return f"values from {low:.3g} to {high:.3g}, outside [0, 1]"
    if function == "binary_crossentropy" or values.ndim == 0 or values.shape[-1] < 2:
        return None
    sums = values.sum(axis=-1)
    if float(np.abs(sums - 1).max()) > SUM_TOLERANCE:
        return f"rows summing to {float(sums.min()):.3g} to {float(sums.max()):.3g}, not 1"
    return None


def logits_line(function: str, shown: str, reason: str, from_spec: bool) -> str:
    """The workload check's line: the loss, why its inputs are not probabilities, the fix."""
    name = PROBABILISTIC_LOSSES[function]
    fix = (
        f'[workload] loss = {{class_name = "{name}", config = {{from_logits = true}}}}'
        if from_spec
        else f"compile with keras.losses.{name}(from_logits=True)"
    )
    return (
        f"the loss {shown} expects probabilities, but the model's outputs on a sample batch are "
        f"not ({reason}): if its last layer gives logits, say from_logits = true: {fix}"
    )
