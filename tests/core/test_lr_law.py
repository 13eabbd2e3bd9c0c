"""The measured learning-rate law (issue 32), against the truth of the noisy quadratic model: its
best rate per batch is computed exactly in NumPy (the expected-loss recursion of
tuner.workloads.noisy_quadratic), about linear in the batch below the critical batch and flat
above it. Pure: no training."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tuner.core.lr_law import BestRate, Slope, alpha_words, best_rate, law_from_points, measure_law
from tuner.core.scaling import scaled_learning_rate, sweep_rules
from tuner.workloads import noisy_quadratic as nqm

BASE = 8
BATCHES = [BASE * k for k in (1, 2, 4, 8, 16)]


def sweep_points(points: int) -> dict[int, list[tuple[float, float]]]:
    """The exact expected losses of an LR sweep of ``points`` rates at each batch, from the
    exact best rate at the base batch (tuner's own sweep rates)."""
    base_lr = nqm.optimal_rate(BASE)
    sweep = {}
    for batch in BATCHES:
        rates = [scaled_learning_rate(r, base_lr, batch, BASE) for r in sweep_rules(points)]
        sweep[batch] = list(zip(rates, nqm.expected_losses(rates, batch), strict=True))
    return sweep


def test_the_exact_curve_is_linear_below_the_critical_batch_and_flat_above() -> None:
    """The truth itself: lr* doubles with the batch at small batches and barely moves past the
    critical batch (about 37 samples with 1,024 samples of budget)."""
    small = nqm.optimal_rate(4) / nqm.optimal_rate(2)
    large = nqm.optimal_rate(256) / nqm.optimal_rate(128)
    assert 1.9 < small < 2.05 and 0.95 < large < 1.1
    assert 25 < nqm.critical_batch() < 55


def test_the_law_on_the_exact_best_rates_finds_alpha_one_and_the_plateau() -> None:
    """lr* computed at batches 2 to 256 (5 % intervals): alpha below the break contains 1 and
    the plateau is reported within a factor 2 of the critical batch."""
    stars = []
    for batch in (2, 4, 8, 16, 32, 64, 128, 256):
        lr = nqm.optimal_rate(batch)
        stars.append(BestRate(batch, lr, lr / 1.05, lr * 1.05, "exact"))
    law = measure_law(stars)
    assert law.regime == "plateau"
    assert law.alpha is not None and law.alpha.low <= 1.0 <= law.alpha.high + 0.05
    assert law.alpha.value > 0.85
    critical = nqm.critical_batch()
    assert law.break_batch is not None and critical / 2 <= law.break_batch <= critical * 2
    assert "stops growing past batch" in law.words


def test_a_sweep_of_five_rates_contains_the_truth_and_finds_the_plateau() -> None:
    """tuner's own sweep (5 rates from half the none rate to twice the linear one) on the exact
    losses: the computed lr* lies inside the measured interval at >= 4 of 5 batches; alpha's
    interval holds 1; the plateau is within 2x of the critical batch."""
    law = law_from_points(sweep_points(5), sigma=0.01)
    assert law is not None
    inside = [s.low <= nqm.optimal_rate(s.batch) <= s.high for s in law.stars]
    assert sum(inside) >= 4, [(s.batch, s.low, s.high) for s in law.stars]
    assert law.alpha is not None and law.alpha.low <= 1.0 <= law.alpha.high
    assert law.regime == "plateau" and law.break_batch is not None
    critical = nqm.critical_batch()
    assert critical / 2 <= law.break_batch <= critical * 2


def test_the_best_rate_is_the_parabola_vertex_with_an_interval() -> None:
    """An exact parabola in log(loss) against log(lr): its vertex, inside its interval."""
    rates = [0.01, 0.02, 0.04, 0.08, 0.16]
    points = [(lr, math.exp((math.log(lr) - math.log(0.05)) ** 2)) for lr in rates]
    star = best_rate(64, points, sigma=0.02)
    assert star is not None and star.censored is None
    assert star.lr == pytest.approx(0.05, rel=1e-6)
    assert star.low < 0.05 < star.high and star.method == "seed noise bootstrap"
    no_noise = best_rate(64, points)
    assert no_noise is not None and no_noise.method == "residual bootstrap"


def test_a_best_rate_at_the_edge_is_a_bound_and_a_diverged_neighbour_a_cliff() -> None:
    falling = [(0.01, 3.0), (0.02, 2.0), (0.04, 1.0)]
    star = best_rate(8, falling)
    assert star is not None and star.censored == "above"
    rising = [(0.01, 1.0), (0.02, 2.0), (0.04, 3.0)]
    low = best_rate(8, rising)
    assert low is not None and low.censored == "below"
    diverged = [(0.01, 3.0), (0.02, 2.0), (0.04, 1.0), (0.08, float("nan"))]
    cliff = best_rate(8, diverged)
    assert cliff is not None and cliff.censored is None and cliff.method == "beside a cliff"
    assert cliff.lr == pytest.approx(0.04) and cliff.high == pytest.approx(0.08)
    assert best_rate(8, [(0.01, 1.0), (0.02, 0.5)]) is None
    law = measure_law([star, low])
    assert law.regime == "unresolved" and law.alpha is None
    assert "widen the sweep" in law.words


def test_a_falling_best_rate_past_a_batch_is_a_surge() -> None:
    lrs = {8: 0.01, 16: 0.02, 32: 0.04, 64: 0.02, 128: 0.01}
    stars = [BestRate(b, lr, lr / 1.1, lr * 1.1, "exact") for b, lr in lrs.items()]
    law = measure_law(stars, noise_scale=40.0)
    assert law.regime == "surge" and law.break_batch == 32
    assert law.after is not None and law.after.high < 0
    assert "falls past batch 32" in law.words and "noise scale is 40" in law.words


def test_a_single_power_law_has_no_break() -> None:
    stars = [BestRate(b, 0.001 * b**0.5, 0.001 * b**0.5 / 1.1, 0.001 * b**0.5 * 1.1, "x")
             for b in (8, 16, 32, 64, 128)]  # fmt: skip
    law = measure_law(stars)
    assert law.regime == "power-law" and law.break_batch is None
    assert law.alpha is not None and law.alpha.value == pytest.approx(0.5)
    assert law.to_dict()["alpha_ci"][0] < 0.5 < law.to_dict()["alpha_ci"][1]


def test_the_words_say_which_rule_the_data_support() -> None:
    text = alpha_words(Slope(0.62, 0.48, 0.77))
    assert text == (
        "alpha = 0.62 (0.48–0.77): between sqrt and linear; consistent with sqrt; "
        "none and linear are ruled out"
    )
    assert "consistent with linear" in alpha_words(Slope(0.95, 0.8, 1.1))


def test_sweep_rates_span_half_none_to_twice_linear() -> None:
    rates = [scaled_learning_rate(r, 0.1, 64, 8) for r in sweep_rules(5)]
    assert rates[0] == pytest.approx(0.05) and rates[-1] == pytest.approx(1.6)
    assert np.allclose(np.diff(np.log(rates)), math.log(32) / 4)
    assert sweep_rules(0) == ()
    with pytest.raises(ValueError, match="sweep-i/N"):  # past the extensions' cap (SWEEP_EXTRA)
        scaled_learning_rate("sweep-9/5", 0.1, 64, 8)
    with pytest.raises(ValueError, match="sweep-i/N"):
        scaled_learning_rate("sweep--3/5", 0.1, 64, 8)
