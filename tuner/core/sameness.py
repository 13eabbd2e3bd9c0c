"""When two grid points train exactly alike: a key of everything that decides a training run.

At the base batch every rule gives the base rate, so those grid points are one training, trained
once (the others recorded ``same_as``: :mod:`tuner.driver.trial.objective`). The key holds what
the run *does*, not the rule's name: batch, effective rate and schedule, optimizer settings, seed,
loop, hyperparameters, precision, devices and budget. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tuner.core.hyperparams import config_key
from tuner.core.scaling import KERAS_ADAM, batch_ratio, optimizer_settings, scaled_learning_rate

SIGNIFICANT_DIGITS = 10
"""Learning rates are compared to 10 significant digits (relative 1e-10): ``1e-3 * sqrt(1)`` and
``1e-3`` are one rate, whatever the last bit of their float says."""


def number(value: float) -> str:
    """A float as the key writes it: 10 significant digits, so rounding noise compares equal."""
    return f"{float(value):.{SIGNIFICANT_DIGITS}g}"


def schedule(
    rule: str,
    base_lr: float,
    learning_rate: float,
    warmup_steps: int | None,
    warmup_epochs: float | None,
) -> dict[str, Any]:
    """``{"constant": rate}``, or ``{"warmup": ...}`` for a ``linear-warmup`` ramp that climbs."""
    if rule == "linear-warmup" and number(base_lr) != number(learning_rate):
        ramp: dict[str, Any] = {"from": number(base_lr), "to": number(learning_rate)}
        if warmup_steps is not None:
            ramp["steps"] = int(warmup_steps)
        else:
            ramp["epochs"] = None if warmup_epochs is None else number(warmup_epochs)
        return {"warmup": ramp}
    return {"constant": number(learning_rate)}


def changed_optimizer_settings(rule: str, ratio: float) -> dict[str, str]:
    """What ``rule`` changes of Adam's defaults at ``ratio`` (empty: nothing)."""
    try:
        settings = optimizer_settings(rule, ratio, KERAS_ADAM)
    except ValueError:  # a ratio too large for Adam's defaults still trains differently
        return {"rescaled_by": number(ratio)}
    return {
        key: number(value)
        for key, value in sorted(settings.items())
        if number(value) != number(KERAS_ADAM[key])
    }


def training_key(
    *,
    global_batch_size: int,
    lr_rule: str,
    base_lr: float,
    base_batch_size: int,
    seed: int,
    loop: str,
    device_signature: str,
    budget: Mapping[str, Any],
    warmup_steps: int | None = None,
    warmup_epochs: float | None = None,
    model_hyperparameters: Mapping[str, Any] | None = None,
    precision: str = "float32",
) -> str:
    """A stable string that is equal for two runs exactly when they train alike. ``budget``
    (what the request says of how much a run trains and evaluates) is compared as given; a
    ``float32`` ``precision`` is left out, so keys stored before precisions were still match."""
    rate = scaled_learning_rate(lr_rule, base_lr, global_batch_size, base_batch_size)
    ratio = batch_ratio(global_batch_size, base_batch_size)
    key = {
        "global_batch_size": int(global_batch_size),
        "schedule": schedule(lr_rule, base_lr, rate, warmup_steps, warmup_epochs),
        "optimizer": changed_optimizer_settings(lr_rule, ratio),
        "seed": int(seed),
        "loop": loop,
        "model": config_key(dict(model_hyperparameters or {})),
        "devices": device_signature,
        "budget": {name: _plain(value) for name, value in sorted(budget.items())},
    }
    if precision != "float32":
        key["precision"] = precision
    return json.dumps(key, sort_keys=True, separators=(",", ":"))


def _plain(value: Any) -> Any:
    """Floats of the budget at the key's precision; everything else as it is."""
    return number(value) if isinstance(value, float) else value
