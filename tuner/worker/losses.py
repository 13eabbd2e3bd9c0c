"""The workload's loss, unreduced: one value per example, for loops that reduce it themselves."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras


def per_example_loss(loss: Any) -> Callable[[Any, Any], Any]:
    """A function ``(y, prediction) -> per-example losses`` for a Keras loss name, function or
    ``Loss`` object (whose ``call`` skips the reduction)."""
    if isinstance(loss, str):
        loss = keras.losses.get(loss)
    if isinstance(loss, keras.losses.Loss):
        return loss.call  # type: ignore[no-any-return]
    return loss  # type: ignore[no-any-return]
