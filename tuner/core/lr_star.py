"""The best learning rate ``lr*`` at one global batch, with its 95 % interval, from the rates
tried there (:func:`best_rate`; the parabola, the bootstrap and censoring:
``docs/guide/lr-law.md``). Pure (NumPy only). A *wall* (a rate that diverged, was :data:`CLIFF`
times worse, or was stopped as dominated) is never fitted: beside the best it brackets ``lr*``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from tuner.core.stats import Z95

RESAMPLES = 400
"""Bootstrap resamples of one batch's fit (seeded: the interval is reproducible)."""
MIN_LOG_SE = 0.02
"""The smallest standard error of ``log lr*`` a batch is weighted with (about 2 %): a batch
whose interval collapsed would otherwise carry the whole fit."""
CLIFF = 20.0
"""A neighbour of the best rate that lost this many times more is a cliff (the edge of
divergence): the curve is too steep there for a parabola."""


@dataclass(frozen=True)
class BestRate:
    """``lr*`` at one global batch with its 95 % interval."""

    batch: int
    lr: float
    low: float
    high: float
    method: str
    """``seed noise bootstrap``, ``residual bootstrap`` or ``grid`` (see the module)."""
    censored: str | None = None
    """``below``: the smallest rate tried was best (``lr* <= lr``); ``above``: the largest."""
    points: int = 0
    stopped: int = 0
    """Rates stopped early as worse than the best at this batch (walls, not fitted losses)."""
    criterion: str = "final loss"
    """What was minimised: ``final loss`` or ``time to target``."""

    @property
    def log_se(self) -> float:
        """The standard error of ``log lr*`` its interval implies (at least :data:`MIN_LOG_SE`)."""
        return max(MIN_LOG_SE, (math.log(self.high) - math.log(self.low)) / (2 * Z95))


STOPPED, DIVERGED = "stopped", "diverged"
"""The kinds of a wall: stopped early as dominated; diverged (or :data:`CLIFF` × the best)."""


def merged_points(
    points: Iterable[tuple[float, float]], worse: Iterable[float] = ()
) -> tuple[np.ndarray, np.ndarray, list[tuple[float, str]]]:
    """Log rates (ascending), the mean log value at each, and the walls (not finished ones)."""
    finite: dict[float, list[float]] = {}
    walls: dict[float, str] = {}
    for lr, value in points:
        if not (lr > 0 and math.isfinite(lr)):
            continue
        if math.isfinite(value) and value > 0:
            finite.setdefault(round(math.log(lr), 9), []).append(math.log(value))
        else:
            walls[round(math.log(lr), 9)] = DIVERGED
    for lr in worse:
        if lr > 0 and math.isfinite(lr):
            walls.setdefault(round(math.log(lr), 9), STOPPED)
    xs = np.array(sorted(finite))
    ys = np.array([float(np.mean(finite[x])) for x in sorted(finite)])
    return xs, ys, sorted((x, kind) for x, kind in walls.items() if x not in finite)


def _vertex(x: np.ndarray, y: np.ndarray) -> float:
    """The parabola's lowest point, within the three points (theirs if it opens downwards)."""
    a, b, _ = np.polyfit(x, y, 2)
    if a <= 0:
        return float(x[int(np.argmin(y))])
    return float(np.clip(-b / (2 * a), x[0], x[-1]))


def _residual_sigma(xs: np.ndarray, ys: np.ndarray, j: int) -> float | None:
    """The noise a parabola through the five points around the best leaves (``None``: fewer)."""
    if len(xs) < 5:
        return None
    lo = int(np.clip(j - 2, 0, len(xs) - 5))
    x, y = xs[lo : lo + 5], ys[lo : lo + 5]
    residual = y - np.polyval(np.polyfit(x, y, 2), x)
    return float(math.sqrt(float(np.sum(residual**2)) / 2))


def best_rate(
    batch: int,
    points: Iterable[tuple[float, float]],
    sigma: float | None = None,
    seed: int = 0,
    worse: Iterable[float] = (),
    criterion: str = "final loss",
) -> BestRate | None:
    """``lr*`` at ``batch`` from its points and the rates known ``worse`` there; ``None`` with
    fewer than three rates or none finished. ``sigma``: the seed noise of ``log(value)``."""
    xs, ys, walls = merged_points(points, worse)
    if not len(xs) or len(xs) + len(walls) < 3:
        return None
    stopped = sum(kind == STOPPED for _, kind in walls)
    j = int(np.argmin(ys))
    cliff = float(ys[j] + math.log(CLIFF))
    below, above = _side(xs, ys, walls, j, -1, cliff), _side(xs, ys, walls, j, 1, cliff)
    lr = float(math.exp(xs[j]))
    star = BestRate(batch, lr, lr, lr, "", None, len(xs), stopped, criterion)
    if below is None or above is None:
        return replace(star, method="edge of the sweep", censored="above" if below else "below")
    if below[1] or above[1]:
        return _bracket(star, xs[j], below, above)
    x, y = xs[j - 1 : j + 2], ys[j - 1 : j + 2]
    vertex = _vertex(x, y)
    low, high = (xs[j - 1] + vertex) / 2, (vertex + xs[j + 1]) / 2  # the sweep's resolution
    method, noise = "seed noise bootstrap", sigma
    if noise is None or noise <= 0:
        method, noise = "residual bootstrap", _residual_sigma(xs, ys, j)
    if noise is None or noise <= 0:
        method = "sweep resolution"
    else:
        rng = np.random.default_rng(seed + batch)
        draws = [_vertex(x, y + rng.normal(0.0, noise, size=3)) for _ in range(RESAMPLES)]
        lo, hi = np.percentile(draws, [2.5, 97.5])
        low, high = min(float(lo), low), max(float(hi), high)
    return replace(star, lr=math.exp(vertex), low=math.exp(low), high=math.exp(high), method=method)


def _side(
    xs: np.ndarray,
    ys: np.ndarray,
    walls: Sequence[tuple[float, str]],
    j: int,
    step: int,
    cliff: float,
) -> tuple[float, str | None] | None:
    """The log rate next to the best on the ``step`` side and its wall kind, or ``None``."""
    k = j + step
    finished = (float(xs[k]), DIVERGED if ys[k] > cliff else None) if 0 <= k < len(xs) else None
    beyond = [(x, kind) for x, kind in walls if (x - xs[j]) * step > 0]
    wall = (min(beyond) if step > 0 else max(beyond)) if beyond else None
    if finished is None or (wall is not None and abs(wall[0] - xs[j]) < abs(finished[0] - xs[j])):
        return wall
    return finished


def _bracket(
    star: BestRate, best: float, below: tuple[float, str | None], above: tuple[float, str | None]
) -> BestRate:
    """The best rate beside a wall: ``lr*`` between the wall and the half-step to a neighbour."""
    low = below[0] if below[1] else (below[0] + best) / 2
    high = above[0] if above[1] else (best + above[0]) / 2
    kinds = {below[1], above[1]}
    method = "beside a cliff" if DIVERGED in kinds else "beside a worse rate"
    return replace(star, low=math.exp(low), high=math.exp(high), method=method)
