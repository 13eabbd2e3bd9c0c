"""The adaptive LR sweep: which of a batch's sweep rates need not be trained (:func:`bracketed`),
and which are added past its edge (:func:`extension`). Issues 32 and 46; the rule and its one
assumption, a single minimum in ``log lr``: ``docs/guide/lr-law.md``; ``benchmarks/lr_law.py``
counts false skips. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from tuner.core.lr_star import merged_points
from tuner.core.scaling import SWEEP_EXTRA, SWEEP_PREFIX, is_sweep, sweep_index

SKIPPED = "bracketed"
"""The status of a sweep rate skipped as bracketed (PRUNED; never a failure, nor a point)."""


def visit_rank(rule: str) -> tuple[int, float, int]:
    """The order a batch's rules are trained in (ascending): the fixed rules first (their rates
    span ``none`` to ``linear``, where ``lr*`` usually is), then the sweep from its middle (the
    ``sqrt`` rate) outwards, the lower side first: the rates nearest the best decide its bracket."""
    if not is_sweep(rule):
        return (0, 0.0, 0)
    index, _, points = rule[len(SWEEP_PREFIX) :].partition("/")
    i, n = int(index), int(points)
    return (1, abs(i - (n + 1) / 2), i)


def neighbours_needed(seed_noise: bool, other_side: int) -> int:
    """How many worse rates between the best and a sweep rate skip it: the points ``best_rate``
    fits with (1 with the seed noise; else 2 a side, more where ``other_side`` has fewer)."""
    return 1 if seed_noise else max(2, 4 - other_side)


def bracketed(
    lr: float,
    points: Iterable[tuple[float, float]],
    worse: Iterable[float] = (),
    *,
    seed_noise: bool = True,
    planned: Iterable[float] = (),
) -> str | None:
    """Why the sweep rate ``lr`` need not be trained, or ``None``: enough rates strictly between
    the best and it are worse than the best (a tie is not), among the batch's finished ``points``
    (not finite: diverged) and ``worse`` rates (stopped early); ``planned``: the batch's grid."""
    xs, ys, walls = merged_points(points, worse)
    if not len(xs) or not (lr > 0 and math.isfinite(lr)):
        return None
    j = int(np.argmin(ys))
    best, target = float(xs[j]), math.log(lr)
    if abs(target - best) < 1e-9:
        return None
    low, high = sorted((best, target))
    between = [float(x) for x, y in zip(xs, ys, strict=True) if low < x < high and y > ys[j]]
    between += [float(x) for x, _ in walls if low < x < high]
    side = 1 if target > best else -1
    other = {
        round(math.log(r), 9) for r in planned if r > 0 and (math.log(r) - best) * side < -1e-9
    }
    if len(between) < neighbours_needed(seed_noise, len(other)):
        return None
    nearest = min(between, key=lambda x: abs(x - best))
    return (
        f"bracketed: the best rate at this batch so far, {math.exp(best):.3g}, has a worse rate "
        f"{'above' if side > 0 else 'below'} it ({math.exp(nearest):.3g}), so lr* is not at "
        f"{lr:.3g} (the final loss has one minimum in log lr): not trained"
    )


@dataclass(frozen=True)
class Extension:
    """Past the ``edge`` rule where the best finished rate sits: train ``rule`` (one log step
    beyond), or with ``rule`` ``None`` stop, ``extra`` rates having been added on that side."""

    side: str
    """``above`` or ``below``."""
    edge: str
    rule: str | None
    extra: int


def extension(
    points: Iterable[tuple[float, float]], worse: Iterable[float], rates: Mapping[str, float]
) -> Extension | None:
    """Whether the sweep goes on past an edge of the batch whose sweep rules have the ``rates``
    (``None``: no): while the best finished rate is the rule furthest out on a side. Asked once
    the batch's rates have finished: a rule not finished yet is no edge."""
    indexed = {sweep_index(rule): rule for rule in rates if is_sweep(rule)}
    xs, ys, walls = merged_points(points, worse)
    if not indexed or not len(xs):
        return None
    best = float(xs[int(np.argmin(ys))])
    for side, (i, n) in (("above", max(indexed)), ("below", min(indexed))):
        edge = indexed[i, n]
        if abs(math.log(rates[edge]) - best) > 1e-9:
            continue
        if any((x - best) * (1 if side == "above" else -1) > 0 for x, _ in walls):
            return None  # a rate beyond the edge is already known worse
        extra = i - n if side == "above" else 1 - i
        if extra >= SWEEP_EXTRA:
            return Extension(side, edge, None, extra)
        step = 1 if side == "above" else -1
        return Extension(side, edge, f"{SWEEP_PREFIX}{i + step}/{n}", extra)
    return None


def extra_rates(rules: Iterable[str]) -> dict[str, int]:
    """Rates added past each end among ``rules`` (from stored trials: never one twice)."""
    extra = {"above": 0, "below": 0}
    for rule in rules:
        try:
            i, n = sweep_index(rule)
        except ValueError:  # a fixed rule
            continue
        extra["above"] = max(extra["above"], i - n)
        extra["below"] = max(extra["below"], 1 - i)
    return extra
