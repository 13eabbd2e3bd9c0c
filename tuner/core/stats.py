"""Intervals for the measurements a decision rests on: pure arithmetic, no third-party statistics
(the method and why, rates on the log scale: ``docs/guide/uncertainty.md``). One run's window
interval does not see the run-to-run noise; its method says so.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip
"""Student t's 97.5 % quantile for 1..30 degrees of freedom (two-sided 95 %)."""
Z95 = 1.959964
"""The normal 97.5 % quantile: a 95 % interval is ± this many standard errors."""
MIN_WINDOWS = 3
"""Timed windows a single run needs for an interval (with 2 it spans ±12.7 standard errors)."""


@dataclass(frozen=True)
class Interval:
    """A 95 % interval ``[low, high]`` and how it was computed (e.g. ``"t over 3 runs"``)."""

    low: float
    high: float
    method: str

    def overlaps(self, other: Interval) -> bool:
        """Whether the two intervals share a point: the measurements do not tell them apart."""
        return self.low <= other.high and other.low <= self.high

    def as_list(self) -> list[float]:
        """``[low, high]``, as stored on a trial and written to the JSON."""
        return [self.low, self.high]


def t_quantile(degrees_of_freedom: int) -> float:
    """Student t's two-sided 95 % quantile (past 30 degrees of freedom, an expansion)."""
    if degrees_of_freedom < 1:
        raise ValueError("a t quantile needs at least 1 degree of freedom")
    if degrees_of_freedom <= len(_T975):
        return _T975[degrees_of_freedom - 1]
    z, df = Z95, degrees_of_freedom
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def t_interval(values: Sequence[float], method: str | None = None) -> Interval | None:
    """The 95 % Student t interval of the mean of ``values``; ``None`` with fewer than 2."""
    n = len(values)
    if n < 2:
        return None
    mean = statistics.fmean(values)
    half = t_quantile(n - 1) * statistics.stdev(values) / math.sqrt(n)
    return Interval(mean - half, mean + half, method or f"t over {n} values")


def log_t_interval(values: Sequence[float], method: str | None = None) -> Interval | None:
    """The 95 % t interval of positive ``values``' geometric mean (``None``: too few)."""
    if len(values) < 2 or any(not v > 0 for v in values):
        return None
    logs = t_interval([math.log(v) for v in values])
    assert logs is not None
    return Interval(math.exp(logs.low), math.exp(logs.high), method or logs.method)


def throughput_interval(
    run_medians: Sequence[float], window_rates: Sequence[float]
) -> Interval | None:
    """The throughput interval over runs' medians (2+), else one run's windows, else ``None``."""
    if len(run_medians) >= 2:
        return log_t_interval(run_medians, f"t over {len(run_medians)} runs")
    if len(window_rates) >= MIN_WINDOWS:
        return log_t_interval(window_rates, f"windows of 1 run ({len(window_rates)} windows)")
    return None


def ratio_interval(
    num: float, num_ci: Interval | None, den: float, den_ci: Interval | None
) -> Interval | None:
    """The interval of ``num / den``: log half-widths added in quadrature (or ``None``)."""
    if num_ci is None or den_ci is None or num <= 0 or den <= 0:
        return None
    halves = [_log_half_width(ci) for ci in (num_ci, den_ci)]
    if None in halves:
        return None
    half = math.hypot(*(h for h in halves if h is not None))
    ratio = num / den
    return Interval(ratio * math.exp(-half), ratio * math.exp(half), "log-ratio, quadrature")


def _log_half_width(ci: Interval) -> float | None:
    if ci.low <= 0 or ci.high <= 0:
        return None
    return (math.log(ci.high) - math.log(ci.low)) / 2


def relative_spread(values: Sequence[float]) -> float | None:
    """Sample sd over the mean's magnitude (``None`` with fewer than 2 values or a mean of 0)."""
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    if mean == 0:
        return None
    return statistics.stdev(values) / abs(mean)


def effective_tolerance(tolerance: float, seed_spread: float | None) -> tuple[float, str]:
    """The loss tolerance ``max(tolerance, 2 × seed_spread)`` and where it came from."""
    if seed_spread is not None and 2 * seed_spread > tolerance:
        return 2 * seed_spread, "seed noise"
    return tolerance, "--tolerance"
