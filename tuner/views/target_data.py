"""The numbers of the time-to-target picture, pure. The batch-size model predicts *samples* to
target: a predicted point has a time only where a throughput was measured."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from optuna.trial import FrozenTrial

from tuner.core.configurations import is_complete, precision_of, unique_trials
from tuner.core.record import decode
from tuner.views.batch_data import complete_points
from tuner.views.runs import interval, representatives, run_count, shown_measurement


@dataclass(frozen=True)
class TargetPoint:
    """One configuration that reached the target: its (median) training time to it."""

    trial: int
    global_batch_size: int
    lr_rule: str
    seconds: float
    low: float | None = None
    high: float | None = None
    samples: int | None = None
    runs: int | None = None


@dataclass(frozen=True)
class PredictedPoint:
    """The model's samples to target at one batch, and seconds where its throughput is known."""

    global_batch_size: int
    samples: float
    seconds: float | None
    measured_samples: float | None = None


@dataclass(frozen=True)
class TargetCurves:
    """What the time-to-target plot shows."""

    target_loss: float | None
    by_rule: dict[str, list[TargetPoint]]
    missed: dict[str, list[int]]
    """Per rule, the global batches whose run ended at its budget above the target."""
    predicted: list[PredictedPoint]
    recommended: TargetPoint | None = None
    tied: tuple[TargetPoint, ...] = ()

    @property
    def top(self) -> float:
        """The top of the time axis, which starts at 0."""
        tops = [max(p.seconds, p.high or 0.0) for ps in self.by_rule.values() for p in ps]
        tops += [p.seconds for p in self.predicted if p.seconds is not None]
        return max(tops, default=0.0) * 1.08 or 1.0


def has_target(trials: Sequence[FrozenTrial], rec: Mapping[str, Any] | None) -> bool:
    """Whether the study measured time to a target loss."""
    if (rec or {}).get("target_loss") is not None:
        return True
    return any(decode(t).decision.reached_target is not None for t in trials)


def target_curves(
    trials: Sequence[FrozenTrial], rec: Mapping[str, Any] | None = None
) -> TargetCurves | None:
    """The time-to-target numbers of the study, ``None`` when it has no target."""
    if not has_target(trials, rec):
        return None
    rec = rec or {}
    best: dict[tuple[str, int], TargetPoint] = {}
    missed: dict[str, set[int]] = {}
    several = len({precision_of(t) for t in trials if "global_batch_size" in t.params}) > 1
    for trial in representatives(unique_trials(trials), trials):
        if not is_complete(trial):
            continue
        shown = shown_measurement(trial, trials)
        # One curve per rule, and per precision in a study of several (as the throughput plot).
        rule = str(trial.params["lr_rule"])
        rule = f"{rule}, {precision_of(trial)}" if several else rule
        batch = int(trial.params["global_batch_size"])
        point = _target_point(trial.number, batch, rule, shown)
        if point is None:
            if decode(shown).decision.reached_target is False:
                missed.setdefault(rule, set()).add(batch)
            continue
        if (rule, batch) not in best or point.seconds < best[(rule, batch)].seconds:
            best[(rule, batch)] = point
    by_rule: dict[str, list[TargetPoint]] = {}
    for (rule, _), point in sorted(best.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        by_rule.setdefault(rule, []).append(point)
    drawn = list(best.values())
    tied_with = set(rec.get("tied_with") or ())
    chosen = [p for p in drawn if p.trial == rec.get("trial_number")]
    return TargetCurves(
        rec.get("target_loss"),
        dict(sorted(by_rule.items())),
        {rule: sorted(sizes) for rule, sizes in sorted(missed.items())},
        predicted_points(trials, rec),
        chosen[0] if chosen else None,
        tuple(sorted((p for p in drawn if p.trial in tied_with), key=lambda p: p.trial)),
    )


def _target_point(number: int, batch: int, rule: str, shown: FrozenTrial) -> TargetPoint | None:
    """The measured time to target of ``shown``'s configuration, or ``None`` when it has none."""
    attrs = decode(shown).flat
    seconds = attrs.get("time_to_target_s")
    if not attrs.get("reached_target") or not isinstance(seconds, int | float):
        return None
    span = interval(attrs, "time_to_target_ci")
    samples = attrs.get("samples_to_target")
    return TargetPoint(
        trial=number,
        global_batch_size=batch,
        lr_rule=rule,
        seconds=float(seconds),
        low=span[0] if span else None,
        high=span[1] if span else None,
        samples=samples if isinstance(samples, int) else None,
        runs=run_count(shown),
    )


def predicted_points(trials: Sequence[FrozenTrial], rec: Mapping[str, Any]) -> list[PredictedPoint]:
    """The predicted samples to target at each batch, with its time: the prediction's own, else
    the samples ÷ the throughput measured there (the pick's rule first); by batch."""
    per_batch = (rec.get("prediction") or {}).get("per_batch") or []
    rule = rec.get("lr_rule")
    measured = complete_points(trials)
    speed: dict[int, float] = {}
    for point in sorted(measured, key=lambda p: p.throughput):  # the best one wins
        speed[point.global_batch_size] = point.throughput
    speed.update({p.global_batch_size: p.throughput for p in measured if p.lr_rule == rule})
    points = []
    for entry in per_batch:
        batch, samples = entry.get("global_batch_size"), entry.get("predicted_samples")
        if not isinstance(batch, int) or not isinstance(samples, int | float):
            continue
        rate, seconds = speed.get(batch), entry.get("predicted_time_to_target_s")
        if not isinstance(seconds, int | float):  # a prediction that did not time itself
            seconds = float(samples) / rate if rate else None
        seen = entry.get("measured_samples")
        points.append(
            PredictedPoint(
                batch,
                float(samples),
                seconds,
                float(seen) if isinstance(seen, int | float) else None,
            )
        )
    return sorted(points, key=lambda p: p.global_batch_size)
