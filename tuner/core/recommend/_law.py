"""The measured learning-rate law of one device signature's trials, and the rate it recommends.

Each trial at a global batch is one ``(learning_rate, final_loss)`` point (a diverged trial a
point of infinite loss; one stopped early as dominated, its loss when it stopped): the LR sweep's
``sweep-i/N`` points and the fixed rules' through the same data. The seed noise (the relative
spread of the base configuration's seed runs) sets the bootstrap's noise; the median gradient
noise scale the trials measured is set beside the critical batch (:mod:`tuner.core.lr_law`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from optuna.trial import FrozenTrial

from tuner.core.configurations import is_complete, status_of
from tuner.core.lr_law import Law, law_from_points
from tuner.core.scaling import is_sweep

LEARNING_RATE_SOURCE = "lr_law"
"""``learning_rate_source`` when the recommended rate is the measured ``lr*`` at its batch."""


def _point(trial: FrozenTrial) -> tuple[int, float, float] | None:
    """``(global_batch_size, learning_rate, final_loss)`` of a trial, when it is a point."""
    attrs = trial.user_attrs
    batch = trial.params.get("global_batch_size", attrs.get("global_batch_size"))
    lr = attrs.get("learning_rate")
    if not isinstance(batch, int) or not isinstance(lr, int | float):
        return None
    status = status_of(trial)
    if status == "diverged":
        return int(batch), float(lr), math.inf
    loss = attrs.get("final_loss")
    usable = is_complete(trial) or status == "dominated"
    if usable and isinstance(loss, int | float) and math.isfinite(loss):
        return int(batch), float(lr), float(loss)
    return None


def seed_sigma(seed_record: dict[str, Any] | None) -> float | None:
    """The seed noise of ``log(final_loss)``: the standard deviation of the seed runs' logs."""
    losses = [
        math.log(x)
        for x in (seed_record or {}).get("final_losses") or []
        if isinstance(x, int | float) and x > 0 and math.isfinite(x)
    ]
    return statistics.stdev(losses) if len(losses) >= 2 else None


def study_law(
    trials: Sequence[FrozenTrial], seed_record: dict[str, Any] | None = None
) -> Law | None:
    """The law of one device signature's trials at one model and precision (``None`` without
    an LR sweep, or without a batch of three rates)."""
    if not any(
        is_sweep(str(t.user_attrs.get("lr_rule") or t.params.get("lr_rule"))) for t in trials
    ):
        return None
    points: dict[int, list[tuple[float, float]]] = {}
    for trial in trials:
        point = _point(trial)
        if point is not None:
            points.setdefault(point[0], []).append(point[1:])
    scales = [
        float(t.user_attrs["gradient_noise_scale"])
        for t in trials
        if isinstance(t.user_attrs.get("gradient_noise_scale"), int | float)
        and math.isfinite(t.user_attrs["gradient_noise_scale"])
        and t.user_attrs["gradient_noise_scale"] > 0
    ]
    noise_scale = statistics.median(scales) if scales else None
    return law_from_points(points, seed_sigma(seed_record), noise_scale)


def law_fields(
    chosen: FrozenTrial, trials: Sequence[FrozenTrial], seed_record: dict[str, Any] | None
) -> dict[str, Any]:
    """``lr_law`` (the JSON block) and, where the law measured ``lr*`` at the chosen batch, the
    recommended ``learning_rate`` set to it (``trained_learning_rate``: the chosen trial's)."""
    law = study_law(trials, seed_record)
    if law is None:
        return {}
    fields: dict[str, Any] = {"lr_law": law.to_dict()}
    star = law.star_at(int(chosen.params.get("global_batch_size", 0)))
    if star is not None:
        fields.update(
            learning_rate=star.lr,
            learning_rate_ci=[star.low, star.high],
            learning_rate_source=LEARNING_RATE_SOURCE,
            trained_learning_rate=chosen.user_attrs.get("learning_rate"),
        )
    return fields
