"""Inside the child: the optimizer a trial trains with, as its learning-rate rule prescribes
(the config from :func:`tuner.core.optimizers.trained_config`, the export's too)."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from typing import Any, TypeVar

import keras

from tuner.core.errors import WorkloadError, error_line
from tuner.core.optimizers import SHAPING_RULES, trained_config
from tuner.core.protocol import LearningRateRule, RunRequest

_Run = TypeVar("_Run", bound=RunRequest)


def at_learning_rate(optimizer: Any, learning_rate: float) -> Any:
    """A fresh optimizer of ``optimizer``'s class and settings at ``learning_rate``, made with the
    class's own ``from_config`` (a custom, unregistered optimizer works). A schedule from an
    ``initial_learning_rate`` keeps its shape; any other gives way (:func:`schedule_kept`)."""
    optimizer = unscaled(optimizer)
    schedule = _schedule(optimizer)
    rate: Any = float(learning_rate)
    if schedule is not None and schedule_kept(optimizer):
        rate = type(schedule).from_config(
            {**schedule.get_config(), "initial_learning_rate": float(learning_rate)}
        )
    try:
        return type(optimizer).from_config({**optimizer.get_config(), "learning_rate": rate})
    except Exception as exc:  # the user's class: whatever its from_config raises
        raise WorkloadError(
            f"{type(optimizer).__name__} cannot be rebuilt at another learning rate "
            f"(from_config(get_config())): {error_line(exc)}; give the class a get_config that "
            "its from_config accepts, or compile without it and name [workload] optimizer"
        ) from exc


def schedule_kept(optimizer: Any) -> bool | None:
    """``None`` for a constant learning rate; else whether :func:`at_learning_rate` keeps the
    schedule (one with an ``initial_learning_rate``)."""
    schedule = _schedule(unscaled(optimizer))
    if schedule is None:
        return None
    return "initial_learning_rate" in schedule.get_config()


def _schedule(optimizer: Any) -> Any:
    # Keras keeps the schedule as given in ``_learning_rate``; ``learning_rate`` is its value now.
    schedule = getattr(optimizer, "_learning_rate", None)
    if isinstance(schedule, keras.optimizers.schedules.LearningRateSchedule):
        return schedule
    return None


def apply_rule(optimizer: Any, rule: LearningRateRule | None) -> Any:
    """``optimizer`` anew with ``rule`` applied; :class:`WorkloadError` where it cannot be."""
    if rule is None or rule.name not in SHAPING_RULES:
        return optimizer
    try:
        config = trained_config(optimizer.get_config(), asdict(rule))
    except ValueError as exc:
        raise WorkloadError(f"{type(optimizer).__name__}: {exc}") from None
    return type(optimizer).from_config(config)


def describe(optimizer: Any, from_build: bool, rule: LearningRateRule | None) -> dict[str, Any]:
    """The optimizer a trial used: class, scalar settings, warmup, and under ``keras`` the whole
    serialized optimizer; under mixed_float16 the one inside Keras's ``LossScaleOptimizer``."""
    optimizer = unscaled(optimizer)
    described: dict[str, Any] = {"class": type(optimizer).__name__, "from_build": from_build}
    for key, value in optimizer.get_config().items():
        if key != "name" and isinstance(value, int | float | str | bool):
            described[key] = value
    if rule is not None and rule.name == "linear-warmup":
        described["learning_rate"] = float(rule.learning_rate)
        described["warmup"] = {
            "from": float(rule.base_lr),
            "to": float(rule.learning_rate),
            "steps": int(rule.warmup_steps or 0),
        }
    if (keras_config := _serialized(optimizer, rule)) is not None:
        described["keras"] = keras_config
    return described


def unscaled(optimizer: Any) -> Any:
    """The optimizer that updates the weights: the one a ``LossScaleOptimizer`` wraps."""
    if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
        return optimizer.inner_optimizer
    return optimizer


def _serialized(optimizer: Any, rule: LearningRateRule | None) -> dict[str, Any] | None:
    """The optimizer as ``keras.optimizers.serialize`` writes it, a constant learning rate as the
    rule gave it (``get_config`` reads back float32: 0.0020000000949949026 for 0.002); ``None``
    when a custom optimizer's config is not plain JSON."""
    try:
        written = keras.optimizers.serialize(optimizer)
        if rule is not None and not isinstance(written["config"].get("learning_rate"), dict):
            written["config"]["learning_rate"] = float(rule.learning_rate)
        json.dumps(written, allow_nan=False)
    except (TypeError, ValueError, KeyError):
        return None
    return dict(written)


def micro(request: _Run) -> _Run:
    """The run the child trains for an accumulating ``request``: its ``global_batch_size`` the
    micro-batch, so samples, windows and warm-ups count micro-steps as Keras's schedules do (a
    fixed ``steps_per_epoch`` counts updates); ``request`` itself when it does not accumulate."""
    steps = request.accumulation_steps
    if steps <= 1:
        return request
    rule = request.rule
    if rule is not None and rule.warmup_steps:
        rule = replace(rule, warmup_steps=rule.warmup_steps * steps)
    budget = request.budget
    if budget.steps_per_epoch:
        budget = replace(budget, steps_per_epoch=budget.steps_per_epoch * steps)
    return replace(
        request, global_batch_size=request.global_batch_size // steps, rule=rule, budget=budget
    )


def accumulating(optimizer: Any, steps: int) -> Any:
    """``optimizer`` applying the mean gradient of ``steps`` micro-steps (itself for 1)."""
    if steps <= 1:
        return optimizer
    try:
        config = {**optimizer.get_config(), "gradient_accumulation_steps": int(steps)}
        return type(optimizer).from_config(config)
    except Exception as exc:  # the user's class: whatever its from_config raises
        raise WorkloadError(
            f"{type(optimizer).__name__} cannot accumulate gradients "
            f"(gradient_accumulation_steps={steps}): {error_line(exc)}"
        ) from exc
