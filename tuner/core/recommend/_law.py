"""The measured learning-rate law of one device signature's trials, and the rate it recommends.

Each trial at a global batch is one ``(learning_rate, value)`` point (the LR sweep's and the
fixed rules' alike): the final validation loss, or under a target, at a batch where some rate
reached it, the time to the target. A diverged trial is a wall (infinite value). A trial stopped
early as dominated by the best at its own batch (:func:`tuner.driver.decide.early_stop.peers`)
is a rate known to be worse there, never a point whose partial loss is fitted as final; one
stopped against another batch says nothing about its own and is left out.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from optuna.trial import FrozenTrial

from tuner.core.adaptive_sweep import extra_rates
from tuner.core.configurations import is_complete, status_of
from tuner.core.lr_law import Law, law_from_points
from tuner.core.record import decode
from tuner.core.scaling import is_sweep

LEARNING_RATE_SOURCE = "lr_law"
"""``learning_rate_source`` when the recommended rate is the measured ``lr*`` at its batch."""
FINAL_LOSS, TIME_TO_TARGET = "final loss", "time to target"


@dataclass
class _Batch:
    """One batch's evidence: final losses, times to the target, and the rates known worse."""

    losses: list[tuple[float, float]] = field(default_factory=list)
    times: list[tuple[float, float]] = field(default_factory=list)
    worse: list[float] = field(default_factory=list)
    not_reached: list[float] = field(default_factory=list)


def _batch_of(trial: FrozenTrial) -> int | None:
    batch = trial.params.get("global_batch_size", decode(trial).configuration.global_batch_size)
    return int(batch) if isinstance(batch, int) else None


def _add(trial: FrozenTrial, into: _Batch, batches: dict[int, int | None]) -> None:
    """File ``trial``'s point into its batch's evidence (``batches``: every trial's batch by
    number, to tell where a dominated trial's reference trained)."""
    attrs = decode(trial).flat
    lr = attrs.get("learning_rate")
    if not isinstance(lr, int | float):
        return
    status = status_of(trial)
    if status == "diverged":
        into.losses.append((float(lr), math.inf))
        into.times.append((float(lr), math.inf))
        return
    if status == "dominated":
        reference = (attrs.get("dominance") or {}).get("reference_trial")
        if isinstance(reference, int) and batches.get(reference) == _batch_of(trial):
            into.worse.append(float(lr))
        return
    loss = attrs.get("final_loss")
    if not is_complete(trial) or not isinstance(loss, int | float) or not math.isfinite(loss):
        return
    into.losses.append((float(lr), float(loss)))
    seconds = attrs.get("time_to_target_s")
    if attrs.get("reached_target") and isinstance(seconds, int | float) and seconds > 0:
        into.times.append((float(lr), float(seconds)))
    elif "target_loss" in attrs:
        into.not_reached.append(float(lr))


def _evidence(trials: Sequence[FrozenTrial]) -> dict[int, _Batch]:
    batches = {t.number: _batch_of(t) for t in trials}
    evidence: dict[int, _Batch] = {}
    for trial in trials:
        batch = batches[trial.number]
        if batch is not None:
            _add(trial, evidence.setdefault(batch, _Batch()), batches)
    return evidence


def batch_points(
    trials: Sequence[FrozenTrial],
) -> dict[int, tuple[list[tuple[float, float]], list[float], str]]:
    """Each batch's ``(points, worse, criterion)`` as the law fits them (and the adaptive sweep
    decides from): the ``(learning_rate, value)`` points, the rates known worse, and which
    value it is."""
    evidence = {}
    for batch, seen in _evidence(trials).items():
        timed = any(math.isfinite(t) for _, t in seen.times)
        evidence[batch] = (
            seen.times if timed else seen.losses,
            seen.worse + (seen.not_reached if timed else []),
            TIME_TO_TARGET if timed else FINAL_LOSS,
        )
    return evidence


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
    an LR sweep, or without a batch of three rates). The seed noise sets the bootstrap's noise
    of the final loss; the median measured gradient noise scale is set beside the critical
    batch (:mod:`tuner.core.lr_law`)."""
    if not any(
        is_sweep(str(decode(t).configuration.lr_rule or t.params.get("lr_rule"))) for t in trials
    ):
        return None
    evidence = batch_points(trials)
    points = {batch: seen[0] for batch, seen in evidence.items()}
    worse = {batch: seen[1] for batch, seen in evidence.items()}
    criteria = {batch: seen[2] for batch, seen in evidence.items()}
    scales = [
        float(scale)
        for scale in (decode(t).result.gradient_noise_scale for t in trials)
        if isinstance(scale, int | float) and math.isfinite(scale) and scale > 0
    ]
    noise_scale = statistics.median(scales) if scales else None
    extra = swept_past(trials)
    return law_from_points(points, seed_sigma(seed_record), noise_scale, worse, criteria, extra)


def swept_past(trials: Sequence[FrozenTrial]) -> list[tuple[int, str, int]]:
    """``(batch, side, rates)``: the rates the adaptive sweep added past its edges at each batch."""
    rules: dict[int, set[str]] = {}
    for trial in trials:
        batch, rule = _batch_of(trial), decode(trial).configuration.lr_rule
        if batch is not None and isinstance(rule, str) and is_sweep(rule):
            rules.setdefault(batch, set()).add(rule)
    return [
        (batch, side, rates)
        for batch, tried in sorted(rules.items())
        for side, rates in extra_rates(tried).items()
        if rates
    ]


def law_fields(
    chosen: FrozenTrial, trials: Sequence[FrozenTrial], seed_record: dict[str, Any] | None
) -> dict[str, Any]:
    """``lr_law`` and, where the law measured ``lr*`` at the chosen batch, ``learning_rate``
    set to it (``trained_learning_rate``: the chosen trial's)."""
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
            trained_learning_rate=decode(chosen).learning_rate,
        )
    return fields
