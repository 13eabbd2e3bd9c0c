"""The numbers behind the batch pictures, pure. A configuration that ran several times is drawn
once, at its representative (:mod:`tuner.views.runs`); a ``same_as`` grid point on its own rule's
line with the other's measurement."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from optuna.trial import FrozenTrial

from tuner.core.configurations import (
    INFEASIBLE,
    is_complete,
    precision_of,
    status_of,
    unique_trials,
)
from tuner.core.record import decode
from tuner.views.runs import (
    interval,
    representatives,
    run_count,
    run_numbers,
    shown_measurement,
)

JITTER = 0.02
"""How far apart (a fraction of the x axis) the rules' points at one batch are drawn, so that
equal values (every rule's rate at the base batch) do not hide one another."""


@dataclass(frozen=True)
class Point:
    """One COMPLETE grid point."""

    trial: int
    global_batch_size: int
    per_replica_batch_size: int
    lr_rule: str
    learning_rate: float
    throughput: float
    final_loss: float
    throughput_low: float | None = None
    throughput_high: float | None = None
    error_source: str = ""
    """What the error bar is: ``95 % CI (t over 3 runs)``, a 1-run window spread, or empty."""
    runs: int | None = None
    same_as: int | None = None
    precision: str | None = None
    """The trial's precision, in a study of several (``None`` in a study of one)."""
    run_trials: tuple[int, ...] = ()
    """The trials its configuration ran as (first run and repeats), when several."""

    @property
    def curve(self) -> str:
        """The line the point is drawn on: its rule, and its precision in a study of several."""
        return self.lr_rule if self.precision is None else f"{self.lr_rule}, {self.precision}"


@dataclass(frozen=True)
class LossBand:
    """The losses the recommendation chose among: the best to ``limit`` (``tolerance`` above)."""

    best: float
    limit: float
    tolerance: float


@dataclass(frozen=True)
class BatchCurves:
    """What the batch-size plots show."""

    by_rule: dict[str, list[Point]]
    oom: dict[int, str]
    baseline_throughput: float | None = None
    recommended: Point | None = None
    loss_band: LossBand | None = None
    tied: tuple[Point, ...] = ()
    """Points the recommendation is still tied with (their 95 % intervals overlap its one)."""
    candidates: tuple[Point, ...] = ()
    """The points the loss tolerance made equal (the recommendation's ``candidates``)."""

    @property
    def throughput_top(self) -> float:
        """The top of the throughput axis: the highest bar, point or baseline, with some room."""
        tops = [
            p.throughput if p.throughput_high is None else max(p.throughput, p.throughput_high)
            for points in self.by_rule.values()
            for p in points
        ]
        tops.append(self.baseline_throughput or 0.0)
        return max(tops) * 1.08 or 1.0


def complete_points(trials: Sequence[FrozenTrial]) -> list[Point]:
    """The COMPLETE grid points with finite values, one per configuration, by batch then rule."""
    points = []
    several = len({precision_of(t) for t in trials if "global_batch_size" in t.params}) > 1
    for trial in representatives(unique_trials(trials), trials):
        if not is_complete(trial):
            continue
        shown = shown_measurement(trial, trials)
        if not is_complete(shown):  # the configuration it trains like has no result shown
            shown = trial
        loss, throughput = shown.values
        attrs = decode(trial).flat
        low, high, source = error_bar(decode(shown).flat, float(throughput))
        same_as = shown.number if shown is not trial else attrs.get("same_as")
        numbers = run_numbers(trial, trials)
        points.append(
            Point(
                trial=trial.number,
                global_batch_size=int(trial.params["global_batch_size"]),
                per_replica_batch_size=int(attrs.get("per_replica_batch_size", 0)),
                lr_rule=str(trial.params["lr_rule"]),
                learning_rate=float(attrs.get("learning_rate", math.nan)),
                throughput=float(throughput),
                final_loss=float(loss),
                throughput_low=low,
                throughput_high=high,
                error_source=source,
                runs=run_count(shown),
                same_as=same_as if isinstance(same_as, int) else None,
                precision=precision_of(trial) if several else None,
                run_trials=tuple(numbers) if len(numbers) > 1 else (),
            )
        )
    return sorted(points, key=lambda p: (p.global_batch_size, p.curve))


def error_bar(
    attrs: Mapping[str, Any], throughput: float
) -> tuple[float | None, float | None, str]:
    """The throughput's error bar ``(low, high, what it is)``: the stored 95 % interval, else one
    run's window spread (drawn as ± half of it), else none."""
    span = interval(dict(attrs), "throughput_ci")
    if span is not None:
        method = attrs.get("throughput_ci_method")
        return span[0], span[1], f"95 % CI ({method})" if method else "95 % CI"
    spread = attrs.get("throughput_spread")
    if isinstance(spread, int | float) and math.isfinite(spread) and spread >= 0:
        half = throughput * float(spread) / 2
        return throughput - half, throughput + half, "window spread of 1 run (max−min)"
    return None, None, ""


def batch_curves(
    trials: Sequence[FrozenTrial], rec: Mapping[str, Any] | None = None
) -> BatchCurves:
    """The points by rule (of several model configurations, the lowest loss) and the
    out-of-memory sizes; ``rec`` adds the pick and the loss band."""
    rec = rec or {}
    points = complete_points(trials)
    best: dict[tuple[str, int], Point] = {}  # several model configurations: the best loss
    for point in points:
        key = (point.curve, point.global_batch_size)
        if key not in best or point.final_loss < best[key].final_loss:
            best[key] = point
    by_rule: dict[str, list[Point]] = {}
    for (rule, _), point in sorted(best.items()):
        by_rule.setdefault(rule, []).append(point)
    oom: dict[int, str] = {}
    for trial in unique_trials(trials):
        status = status_of(trial)
        if status in INFEASIBLE:
            size = int(trial.params["global_batch_size"])
            if oom.get(size) != "oom":  # a measured OOM says more than an implied one
                oom[size] = status
    chosen = [p for p in points if p.trial == rec.get("trial_number")]
    tied_with = set(rec.get("tied_with") or ())
    drawn = [p for rule_points in by_rule.values() for p in rule_points]
    return BatchCurves(
        dict(sorted(by_rule.items())),
        dict(sorted(oom.items())),
        rec.get("baseline_throughput"),
        chosen[0] if chosen else None,
        loss_band(points, rec),
        tuple(p for p in drawn if p.trial in tied_with),
        tuple(p for p in drawn if p.trial in set(rec.get("candidates") or ())),
    )


def loss_band(points: Sequence[Point], rec: Mapping[str, Any]) -> LossBand | None:
    """``rec``'s band: its candidates' best loss to ``loss_tolerance`` above (``None``: none)."""
    tolerance = rec.get("loss_tolerance")
    candidates = set(rec.get("candidates") or ())
    losses = [p.final_loss for p in points if p.trial in candidates]
    if tolerance is None or not losses:
        return None
    low = min(losses)
    return LossBand(low, low + float(tolerance) * abs(low), float(tolerance))


def rule_offsets(rules: Sequence[str], sizes: Iterable[int]) -> dict[str, float]:
    """The factor each rule's x is drawn at: rules side by side, :data:`JITTER` apart."""
    sizes = list(sizes)
    if len(rules) < 2 or not sizes:
        return {rule: 1.0 for rule in rules}
    step = JITTER * (math.log2(max(sizes) / min(sizes)) + 1)  # the axis spans about that
    middle = (len(rules) - 1) / 2
    return {rule: 2 ** ((i - middle) * step) for i, rule in enumerate(rules)}


def pareto_front(points: Iterable[Point]) -> list[Point]:
    """Points no other point beats on both loss (lower) and throughput (higher), by loss."""
    candidates = list(points)
    front = [
        p
        for p in candidates
        if not any(
            q.final_loss <= p.final_loss
            and q.throughput >= p.throughput
            and (q.final_loss < p.final_loss or q.throughput > p.throughput)
            for q in candidates
        )
    ]
    return sorted(front, key=lambda p: (p.final_loss, -p.throughput))
