"""Inside the child: the optimizer a trial trains with, as its learning-rate rule prescribes.

The rate itself comes from :mod:`tuner.core.scaling`; here ``linear-warmup`` becomes a Keras
schedule (a linear ramp from the base rate to the peak) and ``sqrt-adam`` rewrites Adam's
moments. What was used is described by :func:`describe` and stored on the trial.
"""

from __future__ import annotations

from typing import Any

import keras

from tuner.core.errors import WorkloadError
from tuner.core.scaling import optimizer_settings


class LinearWarmup(keras.optimizers.schedules.LearningRateSchedule):
    """``start`` → ``peak`` linearly over ``warmup_steps`` optimizer steps, then ``peak``."""

    def __init__(self, start: float, peak: float, warmup_steps: int) -> None:
        self.start, self.peak, self.warmup_steps = float(start), float(peak), int(warmup_steps)

    def __call__(self, step: Any) -> Any:
        step = keras.ops.cast(step, "float32")
        fraction = keras.ops.minimum(step / max(self.warmup_steps, 1), 1.0)
        return self.start + (self.peak - self.start) * fraction

    def get_config(self) -> dict[str, Any]:
        return {"start": self.start, "peak": self.peak, "warmup_steps": self.warmup_steps}


def apply_rule(optimizer: Any, rule: dict[str, Any] | None) -> Any:
    """A new optimizer of the same class and settings as ``optimizer`` with ``rule`` applied.

    ``rule`` is the request's ``{"name", "ratio", "base_lr", "learning_rate", "warmup_steps"}``
    (``None``: unchanged). Raises :class:`WorkloadError` when the rule does not apply to it.
    """
    if not rule or rule["name"] not in ("linear-warmup", "sqrt-adam"):
        return optimizer
    config = optimizer.get_config()
    if rule["name"] == "sqrt-adam":
        try:
            config.update(optimizer_settings("sqrt-adam", float(rule["ratio"]), config))
        except ValueError as exc:
            raise WorkloadError(f"{type(optimizer).__name__}: {exc}") from None
        return type(optimizer).from_config(config)
    fresh = type(optimizer).from_config(config)
    fresh.learning_rate = LinearWarmup(
        rule["base_lr"], rule["learning_rate"], int(rule["warmup_steps"])
    )
    return fresh


def describe(optimizer: Any, from_build: bool, rule: dict[str, Any] | None) -> dict[str, Any]:
    """The optimizer a trial used: class, scalar settings, and the warmup when there is one."""
    config = optimizer.get_config()
    settings = {
        key: value
        for key, value in config.items()
        if key != "name" and isinstance(value, int | float | str | bool)
    }
    described: dict[str, Any] = {
        "class": type(optimizer).__name__,
        "from_build": from_build,
        **settings,
    }
    if rule and rule["name"] == "linear-warmup":
        described["learning_rate"] = float(rule["learning_rate"])
        described["warmup"] = {
            "from": float(rule["base_lr"]),
            "to": float(rule["learning_rate"]),
            "steps": int(rule["warmup_steps"]),
        }
    return described
