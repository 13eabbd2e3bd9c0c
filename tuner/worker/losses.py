"""The model's own loss, as Keras's ``train_step`` computes it, for steps tuner writes itself (the
noise meters, the custom loops); and the workload's loss unreduced, for the forum answer's bug.
Under ``tf.distribute`` it comes scaled by ``1 / replicas`` (DESIGN.md §4): the caller undoes
that where it needs a replica's own mean.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import keras


def unpack(data: Any) -> tuple[Any, Any, Any]:
    """``(x, y, sample_weight)`` of a batch, as Keras's own ``train_step`` unpacks it."""
    x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
    return x, y, sample_weight


def call_model(model: Any, x: Any, training: bool = True) -> Any:
    """``model(x)`` in training mode, as Keras's ``train_step`` calls it."""
    if getattr(model, "_call_has_training_arg", True):
        return model(x, training=training)
    return model(x)


def model_loss(model: Any, x: Any, y: Any, y_pred: Any, sample_weight: Any) -> Any:
    """``model.compute_loss`` in training mode: the loss ``train_step`` trains on. A user's
    ``compute_loss`` from before Keras 3.3 takes no ``training``; it is called without it."""
    compute = model.compute_loss
    if _takes(compute, "training"):
        return compute(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=True)
    return compute(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight)


def per_example_loss(loss: Any) -> Callable[[Any, Any], Any]:
    """``(y, prediction) -> per-example losses`` for a Keras loss name, function or object."""
    if isinstance(loss, str):
        loss = keras.losses.get(loss)
    if isinstance(loss, keras.losses.Loss):
        return loss.call  # type: ignore[no-any-return]
    return loss  # type: ignore[no-any-return]


def _takes(function: Callable[..., Any], name: str) -> bool:
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):  # no signature to read: assume Keras's own
        return True
    return name in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )
