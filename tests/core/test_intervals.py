"""The intervals decisions rest on (tuner.core.stats), checked on planted data."""

from __future__ import annotations

import math
import random

import pytest

from tuner.core.stats import (
    Interval,
    effective_tolerance,
    log_t_interval,
    ratio_interval,
    relative_spread,
    t_interval,
    t_quantile,
    throughput_interval,
)


@pytest.mark.parametrize("n", [2, 3, 5])
def test_the_t_interval_covers_the_true_mean_95_percent_of_the_time(n: int) -> None:
    rng = random.Random(1234 + n)
    true_mean, sigma, draws = 17_000.0, 2_500.0, 2_000
    covered = 0
    for _ in range(draws):
        ci = t_interval([rng.gauss(true_mean, sigma) for _ in range(n)])
        assert ci is not None
        covered += ci.low <= true_mean <= ci.high
    # 95 % ± 3 standard errors of a binomial proportion over 2,000 draws (about ±1.5 %).
    assert abs(covered / draws - 0.95) < 3 * math.sqrt(0.95 * 0.05 / draws)


def test_a_normal_interval_would_undercover_with_three_runs() -> None:
    # Why t and not 1.96: with 3 runs the normal quantile covers far less than 95 %.
    rng = random.Random(7)
    covered = 0
    for _ in range(2_000):
        values = [rng.gauss(0.0, 1.0) for _ in range(3)]
        ci = t_interval(values)
        assert ci is not None
        half = (ci.high - ci.low) / 2 * 1.959964 / t_quantile(2)
        mean = (ci.high + ci.low) / 2
        covered += abs(mean) <= half
    assert covered / 2_000 < 0.85


def test_t_quantiles_match_the_table_and_approach_the_normal() -> None:
    assert t_quantile(1) == pytest.approx(12.706)
    assert t_quantile(2) == pytest.approx(4.303)
    assert t_quantile(30) == pytest.approx(2.042)
    assert t_quantile(31) == pytest.approx(2.040, abs=2e-3)
    assert t_quantile(120) == pytest.approx(1.980, abs=2e-3)
    assert t_quantile(10_000) == pytest.approx(1.960, abs=1e-3)
    with pytest.raises(ValueError):
        t_quantile(0)


def test_fewer_than_two_values_have_no_interval() -> None:
    assert t_interval([]) is None
    assert t_interval([5.0]) is None
    assert throughput_interval([5.0], [1.0]) is None


def test_runs_are_preferred_to_windows_and_the_method_says_which() -> None:
    runs = throughput_interval([100.0, 110.0, 120.0], [1.0, 2.0, 3.0])
    assert runs is not None and runs.method == "t over 3 runs"
    assert runs.low < 110.0 < runs.high
    windows = throughput_interval([100.0], [98.0, 100.0, 102.0, 101.0])
    assert windows is not None and windows.method == "windows of 1 run (4 windows)"
    assert windows.low < 100.25 < windows.high
    assert throughput_interval([100.0], [98.0, 102.0]) is None  # 2 windows: ±12.7 SE


def test_a_throughput_interval_never_reaches_below_zero() -> None:
    wide = throughput_interval([1_000.0, 30_000.0], [])
    assert wide is not None and 0.0 < wide.low < 1_000.0 and wide.high > 30_000.0
    assert log_t_interval([1.0, 0.0]) is None and log_t_interval([5.0]) is None


def test_the_log_interval_covers_the_geometric_mean_95_percent_of_the_time() -> None:
    rng = random.Random(31)
    median, draws = 17_000.0, 2_000  # lognormal: 25 % multiplicative noise per run
    covered = 0
    for _ in range(draws):
        ci = log_t_interval([median * math.exp(rng.gauss(0.0, 0.25)) for _ in range(3)])
        assert ci is not None
        covered += ci.low <= median <= ci.high
    assert abs(covered / draws - 0.95) < 3 * math.sqrt(0.95 * 0.05 / draws)


def test_overlap() -> None:
    a = Interval(1.0, 2.0, "m")
    assert a.overlaps(Interval(2.0, 3.0, "m"))
    assert Interval(1.5, 1.6, "m").overlaps(a)
    assert not a.overlaps(Interval(2.01, 3.0, "m"))
    assert a.as_list() == [1.0, 2.0]


def test_the_ratio_interval_adds_relative_widths_in_quadrature() -> None:
    num = Interval(19.0, 21.0, "m")  # about ±5 %
    den = Interval(9.5, 10.5, "m")  # about ±5 %
    ci = ratio_interval(20.0, num, 10.0, den)
    assert ci is not None
    assert ci.low < 2.0 < ci.high
    half = math.log(ci.high / ci.low) / 2
    assert half == pytest.approx(math.hypot(math.log(21 / 19) / 2, math.log(10.5 / 9.5) / 2))
    assert ratio_interval(20.0, None, 10.0, den) is None
    assert ratio_interval(20.0, Interval(-1.0, 1.0, "m"), 10.0, den) is None


def test_the_ratio_interval_covers_the_true_speedup() -> None:
    rng = random.Random(99)
    covered, draws = 0, 1_000
    for _ in range(draws):
        fast = [rng.gauss(19_000, 900) for _ in range(3)]
        slow = [rng.gauss(10_000, 500) for _ in range(3)]
        ci = ratio_interval(sum(fast) / 3, t_interval(fast), sum(slow) / 3, t_interval(slow))
        assert ci is not None
        covered += ci.low <= 1.9 <= ci.high
    assert 0.93 < covered / draws < 0.995  # quadrature of two t intervals: a little wide


def test_relative_spread() -> None:
    assert relative_spread([1.0]) is None
    assert relative_spread([0.0, 0.0]) is None
    assert relative_spread([0.9, 1.1]) == pytest.approx(0.1414, abs=1e-4)


@pytest.mark.parametrize(
    ("tolerance", "spread", "expected"),
    [
        (0.02, None, (0.02, "--tolerance")),
        (0.02, 0.005, (0.02, "--tolerance")),
        (0.02, 0.01, (0.02, "--tolerance")),
        (0.02, 0.25, (0.5, "seed noise")),
        (0.6, 0.25, (0.6, "--tolerance")),
    ],
)
def test_the_tolerance_is_the_larger_of_the_flag_and_twice_the_seed_spread(
    tolerance: float, spread: float | None, expected: tuple[float, str]
) -> None:
    assert effective_tolerance(tolerance, spread) == expected
