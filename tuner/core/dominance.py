"""Stopping dominated trials early, with a bounded false-stop rate: the loss-gap test (each of the
``K`` looks spends ``α / K``; ``s`` at a look is :func:`check_noise`'s) and, under a loss target,
the time rule (:func:`time_look`). The method and why: ``docs/design/measurement.md``, "Stopping
dominated trials early".
"""

from __future__ import annotations

import bisect
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tuner.core.spec import SearchSpec

DEFAULT_ALPHA = 0.05
"""The false-stop rate: the chance that a trial as good as the reference is stopped at all."""
LOSS_GAP = "loss-gap"
TIME_TO_TARGET = "time-to-target"
MAX_LOOKS = 3
"""Looks a trial spreads its false-stop rate over: more looks stop sooner but each must be
surer (with 3 seeds, t's quantile is 5.4 at 3 looks and 7.7 at 6, for alpha 0.05)."""


@dataclass(frozen=True)
class GapTest:
    """One trial's loss-gap test: its band, seed noise, false-stop rate and looks."""

    band: float
    noise_sd: float
    noise_runs: int
    alpha: float
    looks: int

    @property
    def critical(self) -> float:
        """The margin above the gap's estimate that noise explains at one look (log scale)."""
        quantile = t_upper_quantile(self.alpha / max(1, self.looks), self.noise_runs - 1)
        return quantile * math.sqrt(2.0) * self.noise_sd


@dataclass(frozen=True)
class Verdict:
    """The outcome of one look: whether the trial is dominated, and the evidence."""

    dominated: bool
    evidence: dict[str, Any]


def gap_look(test: GapTest, samples: int, loss: float, reference_loss: float) -> Verdict:
    """One look of ``test`` at ``samples``: the trial's ``loss`` against the reference's."""
    gap = math.log(loss / reference_loss)
    lower = gap - test.critical
    evidence = {
        "rule": LOSS_GAP,
        "samples": int(samples),
        "loss": loss,
        "reference_loss": reference_loss,
        "gap": gap,
        "lower_bound": lower,
        "statistic": gap / (math.sqrt(2.0) * test.noise_sd),
        "critical": test.critical,
        "band": test.band,
        "alpha": test.alpha,
        "looks": test.looks,
        "noise_sd": test.noise_sd,
        "noise_runs": test.noise_runs,
    }
    return Verdict(lower > math.log1p(test.band), evidence)


def looks_of(checks: int) -> int:
    """The looks a trial with ``checks`` checks takes (:func:`look_indices`)."""
    return len(look_indices(checks))


def look_indices(checks: int) -> tuple[int, ...]:
    """The checks (from 0) looked at: at most :data:`MAX_LOOKS`, between the first and last."""
    inner = range(1, checks - 1)
    if len(inner) <= MAX_LOOKS:
        return tuple(inner)
    return tuple(sorted({round(checks * j / (MAX_LOOKS + 1)) for j in range(1, MAX_LOOKS + 1)}))


def is_look(index: int, checks: int) -> bool:
    """Whether check ``index`` (from 0) of ``checks`` is one of the test's looks."""
    return index in look_indices(checks)


def reference_at(samples: Sequence[int], losses: Sequence[float], at: int) -> float | None:
    """The reference's loss at ``at`` samples: linear between its checks; ``None`` before its
    first check or more than a quarter past its last (another budget: no comparison)."""
    if not samples or at < samples[0] or at > samples[-1] * 1.25:
        return None
    if at >= samples[-1]:
        return float(losses[-1])
    i = max(1, bisect.bisect_left(samples, at))  # the first check at or past ``at``
    low, high = samples[i - 1], samples[i]
    share = (at - low) / (high - low) if high > low else 1.0
    return float(losses[i - 1] + share * (losses[i] - losses[i - 1]))


def check_noise(curves: Sequence[Sequence[Sequence[float]]]) -> tuple[list[int], list[float]]:
    """The seed runs' sd of the log loss at each shared check; empty with fewer than two."""
    usable = [c for c in curves if c and all(loss > 0 for _, loss in c)]
    if len(usable) < 2:
        return [], []
    length = min(len(c) for c in usable)
    samples, sds = [], []
    for k in range(length):
        logs = [math.log(c[k][1]) for c in usable]
        mean = sum(logs) / len(logs)
        sds.append(math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1)))
        samples.append(int(usable[0][k][0]))
    return samples, sds


def time_look(
    elapsed_s: float, window_s: float, best_time_s: float, margin: float
) -> tuple[bool, float]:
    """Whether a trial short of the target can no longer beat ``best_time_s`` (training seconds),
    and the earliest time it could reach the target."""
    earliest = elapsed_s + window_s
    return earliest > best_time_s * (1.0 + margin), earliest


def measures_seed_noise(search: SearchSpec) -> bool:
    """Whether a search runs seed runs: ``seeds`` ≥ 2 in a grid, and under a loss target only for
    early stops (trials stop at the target: their final losses set no tolerance)."""
    if search.grid.joint or search.decision.seeds < 2:
        return False
    return search.run.target_loss is None or search.decision.early_stop


@functools.lru_cache(maxsize=256)
def t_upper_quantile(p: float, df: int) -> float:
    """The ``q`` with ``P(T > q) = p`` (``0 < p < 0.5``) for Student's t, by bisection."""
    if not 0 < p < 0.5:
        raise ValueError(f"an upper tail probability in (0, 0.5), got {p}")
    if df < 1:
        raise ValueError("a t quantile needs at least 1 degree of freedom")
    low, high = 0.0, 1.0
    while t_upper_tail(high, df) > p:
        high *= 2.0
    for _ in range(100):
        mid = (low + high) / 2.0
        if t_upper_tail(mid, df) > p:
            low = mid
        else:
            high = mid
    return (low + high) / 2.0


def t_upper_tail(x: float, df: int) -> float:
    """``P(T > x)`` for Student's t, ``x >= 0``: half ``I_{df / (df + x²)}(df / 2, 1 / 2)``."""
    return 0.5 * _incomplete_beta(df / 2.0, 0.5, df / (df + x * x))


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta ``I_x(a, b)`` by its continued fraction (Lentz)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x > (a + 1.0) / (a + b + 2.0):  # the fraction converges fast on the other side
        return 1.0 - _incomplete_beta(b, a, 1.0 - x)
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    value = d
    for m in range(1, 300):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            value *= c * d
        if abs(c * d - 1.0) < 1e-14:
            break
    return math.exp(log_front) * value / a


def describe(evidence: dict[str, Any], reference: int | None, budget: int | None) -> str:
    """The one line a dominated trial stores as its ``error`` (``tuner show`` lists it)."""
    seen = f"{evidence['samples']}" + (f" of {budget}" if budget else "")
    if evidence["rule"] == TIME_TO_TARGET:
        return (
            f"dominated: target {evidence['target_loss']:.4g} not reached after {seen} samples "
            f"({evidence['elapsed_s']:.3g} s); the earliest it could is "
            f"{evidence['earliest_s']:.3g} s, past the best time {evidence['best_time_s']:.3g} s"
            f"{_of(reference)} + {evidence['margin']:.0%}"
        )
    worse = math.expm1(evidence["gap"])
    low = math.expm1(evidence["lower_bound"])
    return (
        f"dominated: at {seen} samples loss {evidence['loss']:.4g} vs "
        f"{evidence['reference_loss']:.4g}{_of(reference)}, {worse:.0%} worse (at least {low:.0%} "
        f"with seed noise {evidence['noise_sd']:.1%}, alpha {evidence['alpha']:g}), beyond the "
        f"{evidence['band']:.1%} band"
    )


def _of(reference: int | None) -> str:
    return "" if reference is None else f" (#{reference})"
