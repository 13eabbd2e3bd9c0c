"""The sequential test that stops dominated trials (tuner.core.dominance): its quantiles, its looks,
the reference curve, the time rule, and a simulation of its false-stop rate under H0."""

from __future__ import annotations

import math
import random

import pytest

from tuner.core import dominance
from tuner.core.dominance import GapTest, gap_look, reference_at, t_upper_quantile, time_look
from tuner.core.stats import _T975


@pytest.mark.parametrize("df", [1, 2, 3, 5, 10, 30])
def test_t_quantile_matches_the_two_sided_table(df: int) -> None:
    assert t_upper_quantile(0.025, df) == pytest.approx(_T975[df - 1], abs=1e-3)


def test_t_quantile_deep_in_the_tail() -> None:
    # Student t with 2 degrees of freedom: P(T > q) = (1 - q / sqrt(q^2 + 2)) / 2, exactly.
    q = t_upper_quantile(0.00625, 2)
    assert (1 - q / math.sqrt(q * q + 2)) / 2 == pytest.approx(0.00625, rel=1e-9)
    with pytest.raises(ValueError):
        t_upper_quantile(0.6, 3)
    with pytest.raises(ValueError):
        t_upper_quantile(0.01, 0)


def test_looks_skip_the_first_and_the_last_check() -> None:
    assert [dominance.is_look(i, 5) for i in range(5)] == [False, True, True, True, False]
    assert dominance.looks_of(5) == 3
    assert dominance.looks_of(2) == 0
    assert dominance.look_indices(8) == (2, 4, 6)  # at most three, spread evenly
    assert dominance.look_indices(10) == (2, 5, 8)


def test_reference_is_linear_between_its_checks() -> None:
    samples, losses = (100, 200, 300), (1.0, 0.5, 0.3)
    assert reference_at(samples, losses, 150) == pytest.approx(0.75)
    assert reference_at(samples, losses, 200) == pytest.approx(0.5)
    assert reference_at(samples, losses, 310) == pytest.approx(0.3)  # a smaller remainder
    assert reference_at(samples, losses, 50) is None  # no extrapolation before its first check
    assert reference_at(samples, losses, 1000) is None  # another budget


def test_a_gap_beyond_band_and_noise_stops() -> None:
    test = GapTest(band=0.02, noise_sd=0.01, noise_runs=3, alpha=0.05, looks=8)
    # With 3 seeds (2 degrees of freedom) and 8 looks the noise explains a log gap of ~0.125.
    assert test.critical == pytest.approx(t_upper_quantile(0.05 / 8, 2) * math.sqrt(2) * 0.01)
    far = gap_look(test, 4096, loss=0.9, reference_loss=0.4)
    assert far.dominated
    assert far.evidence["gap"] == pytest.approx(math.log(0.9 / 0.4))
    assert far.evidence["lower_bound"] == pytest.approx(math.log(0.9 / 0.4) - test.critical)
    assert far.evidence["samples"] == 4096 and far.evidence["alpha"] == 0.05
    near = gap_look(test, 4096, loss=0.44, reference_loss=0.4)  # 10 % worse: within the noise
    assert not near.dominated


def test_the_time_rule_leaves_a_tie_running() -> None:
    late, earliest = time_look(elapsed_s=10.0, window_s=1.0, best_time_s=10.0, margin=0.05)
    assert late and earliest == 11.0
    tie, _ = time_look(elapsed_s=9.4, window_s=1.0, best_time_s=10.0, margin=0.05)
    assert not tie  # 10.4 s is within 5 % of the best: it may still tie


def test_describe_says_why() -> None:
    test = GapTest(band=0.02, noise_sd=0.01, noise_runs=3, alpha=0.05, looks=8)
    evidence = gap_look(test, 4096, 0.9, 0.4).evidence
    line = dominance.describe(evidence, 3, 10240)
    assert line.startswith("dominated: at 4096 of 10240 samples loss 0.9 vs 0.4 (#3), 125% worse")
    assert "alpha 0.05" in line and "2.0% band" in line


def _run(curve: list[float], offset_sd: float, check_sd: float, rng: random.Random) -> list[float]:
    """One run's log losses: the mean curve, a seed offset kept over the run, per-check noise."""
    offset = rng.gauss(0.0, offset_sd)
    return [m + offset + rng.gauss(0.0, check_sd) for m in curve]


def _stops(gap: float, band: float, seeds: int, rng: random.Random, checks: int = 10) -> int | None:
    """Simulate one trial against one reference (each a run with a per-run seed offset and
    per-check noise, total sd 0.02 on the log loss) with the seed sd estimated from ``seeds``
    runs; the check it stops at, or ``None``."""
    curve = [math.log(2.0 / (1 + k)) for k in range(checks)]
    offset_sd, check_sd = 0.016, 0.012  # sqrt(0.016^2 + 0.012^2) = 0.02
    finals = [_run(curve, offset_sd, check_sd, rng)[-1] for _ in range(seeds)]
    mean = sum(finals) / seeds
    sd = math.sqrt(sum((x - mean) ** 2 for x in finals) / (seeds - 1))
    test = GapTest(band=band, noise_sd=sd, noise_runs=seeds, alpha=0.05, looks=checks - 2)
    reference = _run(curve, offset_sd, check_sd, rng)
    trial = _run([m + gap for m in curve], offset_sd, check_sd, rng)
    for k in range(checks):
        if dominance.is_look(k, checks):
            look = gap_look(test, k, math.exp(trial[k]), math.exp(reference[k]))
            if look.dominated:
                return k
    return None


@pytest.mark.parametrize("seeds", [2, 3, 5])
def test_false_stops_under_h0_stay_below_alpha(seeds: int) -> None:
    """A/A: the same configuration with other seeds. Even with no band at all (the worst case
    of H0), fewer than alpha = 5 % of 3000 simulated trials are stopped (about 1.5 %: the union
    bound over correlated looks is conservative)."""
    rng = random.Random(31 + seeds)
    stopped = sum(_stops(0.0, 0.0, seeds, rng) is not None for _ in range(3000))
    assert stopped / 3000 <= 0.05


def test_h0_at_the_band_edge_stays_below_alpha() -> None:
    """A trial exactly at the band's edge (the hardest case H0 allows) is stopped <= 5 %."""
    rng = random.Random(7)
    band = 0.04
    stopped = sum(_stops(math.log1p(band), band, 3, rng) is not None for _ in range(3000))
    assert stopped / 3000 <= 0.05


@pytest.mark.parametrize(("worse", "seeds"), [(2.0, 3), (1.4, 5)])
def test_a_clearly_worse_trial_is_stopped_early(worse: float, seeds: int) -> None:
    """A trial twice as bad at every check (a too-high learning rate) is stopped nearly always
    with 3 seeds, one 40 % worse with 5; most at their first look."""
    rng = random.Random(11)
    stops = [_stops(math.log(worse), 0.04, seeds, rng) for _ in range(1000)]
    stopped = sorted(s for s in stops if s is not None)
    assert len(stopped) / 1000 >= 0.95
    assert stopped[len(stopped) // 2] == dominance.look_indices(10)[0]


def test_the_seed_runs_noise_at_each_check() -> None:
    curves = [[[1024, 1.0], [2048, 0.5]], [[1024, 2.0], [2048, 0.5]], [[1024, 1.0], [2048, 0.5]]]
    samples, sds = dominance.check_noise(curves)
    assert samples == [1024, 2048]
    assert sds[0] == pytest.approx(math.log(2) / math.sqrt(3)) and sds[1] == 0.0
    assert dominance.check_noise(curves[:1]) == ([], [])


def test_describe_the_time_rule() -> None:
    evidence = {
        "rule": dominance.TIME_TO_TARGET,
        "samples": 2304,
        "target_loss": 0.02,
        "elapsed_s": 0.2412,
        "earliest_s": 0.3216,
        "best_time_s": 0.2954,
        "margin": 0.05,
    }
    assert dominance.describe(evidence, 5, 7680) == (
        "dominated: target 0.02 not reached after 2304 of 7680 samples (0.241 s); the earliest "
        "it could is 0.322 s, past the best time 0.295 s (#5) + 5%"
    )
