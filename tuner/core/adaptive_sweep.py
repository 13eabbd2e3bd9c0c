"""The adaptive LR sweep: which of a batch's sweep rates need not be trained (issues 32 and 46;
``docs/guide/lr-law.md``).

A batch's rates are trained in the order most likely to find ``lr*`` first (:func:`visit_rank`),
and a sweep rate is skipped once the best finished rate is bracketed on its side
(:func:`bracketed`). **The assumption**: the expected final loss has a single minimum in
``log lr`` over the sweep, so a rate beyond a worse one cannot be the best. It holds for the noisy
quadratic model's exact loss (``tests/core/test_adaptive_sweep.py``); measured losses are noisy,
and ``benchmarks/lr_law.py`` counts the false skips. Where the best is at the sweep's edge,
:func:`extension` names one rate more past it, at most :data:`tuner.core.scaling.SWEEP_EXTRA` a
side. Pure: the driver gathers the points and stores a skip as ``bracketed``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from tuner.core.lr_star import merged_points
from tuner.core.scaling import SWEEP_EXTRA, SWEEP_PREFIX, is_sweep, sweep_index

SKIPPED = "bracketed"
"""The status of a sweep rate not trained because the best rate at its batch is bracketed on its
side (PRUNED; never a failure, never a measured point)."""


def visit_rank(rule: str) -> tuple[int, float, int]:
    """The order a batch's rules are trained in (ascending): the fixed rules first, in their
    order (their rates span ``none`` to ``linear``, where ``lr*`` usually is), then the sweep from
    its middle outwards, the lower side first at equal distance. The middle is the ``sqrt`` rate
    (the geometric middle of half ``none`` and twice ``linear``), so the sweep starts where the
    rules predict ``lr*`` and moves out: once the best is bracketed, the rates beyond are skipped
    whichever order they come in, and those nearest the best decide that bracket."""
    if not is_sweep(rule):
        return (0, 0.0, 0)
    index, _, points = rule[len(SWEEP_PREFIX) :].partition("/")
    i, n = int(index), int(points)
    return (1, abs(i - (n + 1) / 2), i)


def neighbours_needed(seed_noise: bool, other_side: int) -> int:
    """How many worse finished rates must lie between the best and a sweep rate to skip it: the
    points :func:`tuner.core.lr_star.best_rate` fits with. With the seed noise measured, the
    parabola through the best and one neighbour a side: 1. Without it, the interval is the
    residual noise of a parabola through the five finished rates around the best: 2 a side, or
    more on one side when the other has fewer (``other_side``: the batch's rates beyond the best
    on the other side) — one more point trained rather than an interval left without its noise."""
    return 1 if seed_noise else max(2, 4 - other_side)


def bracketed(
    lr: float,
    points: Iterable[tuple[float, float]],
    worse: Iterable[float] = (),
    *,
    seed_noise: bool = True,
    planned: Iterable[float] = (),
) -> str | None:
    """Why the sweep rate ``lr`` need not be trained at its batch, or ``None`` (train it).

    ``points``: the batch's finished ``(learning_rate, value)`` pairs, the value to minimise (the
    final loss, or under a target the time to it; not finite: diverged); ``worse``: the rates
    known worse than the best there (stopped early as dominated by it, under a target never
    reaching it); ``planned``: every rate of the batch's grid, tried or not; ``seed_noise``:
    whether the study measured it (:func:`neighbours_needed`). ``lr`` is skipped when enough
    rates strictly between the best and it are worse than the best: a diverged or stopped rate,
    or a finished one whose value is strictly higher (a tie is not worse). With nothing
    finished, or ``lr`` the best itself, it is trained: a best at the edge of what was tried
    keeps the sweep going to its edge."""
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
    """What the sweep does past an edge of a batch where the best finished rate sits at it:
    train ``rule`` (``sweep-i/N`` one log step beyond ``edge``, the rate tried furthest out on
    ``side``), or, with ``rule`` ``None``, stop: :data:`tuner.core.scaling.SWEEP_EXTRA` rates were
    already added on that side (``extra``: how many)."""

    side: str
    """``above`` or ``below``."""
    edge: str
    rule: str | None
    extra: int


def extension(
    points: Iterable[tuple[float, float]],
    worse: Iterable[float],
    rates: Mapping[str, float],
) -> Extension | None:
    """Whether the sweep at one batch goes on past its edge, and with which rule; ``None``: no.

    ``points``, ``worse``: the batch's finished points and the rates known worse there, as
    :func:`bracketed` reads them; ``rates``: every sweep rule of the batch, planned or already
    added past an end, with its rate. It goes on when the best finished rate is the rate of the
    rule furthest out on one side (the largest index: above; the smallest: below): one rate
    more, the same log step further, until a rate is worse or diverges (then the best is no
    longer at the edge), or :data:`SWEEP_EXTRA` rates were added on that side (``rule`` None).
    A rule not finished yet is no edge: the caller asks once the batch's rates have finished."""
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
    """How many rates the sweep added past each of its ends (``above``, ``below``) among the
    sweep ``rules`` tried at one batch: the stored trials say it, so a resumed study goes on from
    there and never adds one twice."""
    extra = {"above": 0, "below": 0}
    for rule in rules:
        try:
            i, n = sweep_index(rule)
        except ValueError:  # a fixed rule
            continue
        extra["above"] = max(extra["above"], i - n)
        extra["below"] = max(extra["below"], 1 - i)
    return extra
