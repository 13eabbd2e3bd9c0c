"""Unit tests of the noise-scale arithmetic, statistical efficiency, goodput and its policy."""

from __future__ import annotations

import numpy as np
import pytest
from trials import make_trial, run_recommend

from tuner.core.efficiency import NoiseScale, goodput, statistical_efficiency, step_estimates
from tuner.core.errors import NoCompleteTrialError


def test_step_estimates_recover_g_and_trace_from_exact_expectations():
    # E‖g_B‖² = |G|² + trΣ/B for both batch sizes: the estimates are exact on expectations.
    g2, trace, n, b = 4.0, 68.0, 4, 256
    mean_sq = g2 + trace / b
    mean_grad_sq = g2 + trace / (n * b)
    assert step_estimates(n, b, mean_sq, mean_grad_sq) == pytest.approx((g2, trace))


def test_identical_replica_gradients_read_no_noise_despite_float32_rounding():
    # Two replicas with the same gradient: the device's float32 sums differ by a few ulps.
    norm = np.float32(3.7)
    mean_sq, mean_grad_sq = float(norm), float(np.nextafter(norm, np.float32(0)))
    assert step_estimates(2, 32, mean_sq, mean_grad_sq)[1] == 0.0
    scale = NoiseScale()
    scale.update(*step_estimates(2, 32, mean_sq, mean_grad_sq))
    assert scale.value is None
    # ...while a real gap (B_simple of one example against a batch of 32) is kept.
    assert step_estimates(2, 32, 1.0 + 1 / 32, 1.0 + 1 / 64)[1] == pytest.approx(1.0)


def test_step_estimates_need_two_replicas():
    with pytest.raises(ValueError, match="at least 2 replicas"):
        step_estimates(1, 64, 1.0, 1.0)


def test_noise_scale_smooths_numerator_and_denominator_apart():
    scale = NoiseScale(beta=0.5)
    assert scale.value is None
    scale.update(g2=2.0, s=10.0)
    assert scale.value == pytest.approx(5.0)  # bias correction: not pulled towards zero
    scale.update(g2=1.0, s=30.0)
    # EMA(S) = 0.25·10 + 0.5·30 = 17.5 and EMA(|G|²) = 0.25·2 + 0.5·1 = 1.0 (before correction):
    # their ratio, not the mean of the ratios 5 and 30.
    assert scale.value == pytest.approx(17.5)
    scale.mark_epoch()
    assert scale.history == [pytest.approx(17.5)]


def test_noise_scale_is_none_while_the_gradient_estimate_is_not_positive():
    scale = NoiseScale()
    assert scale.why_none is None  # nothing measured yet: nothing to explain
    scale.update(g2=-1.0, s=5.0)
    assert scale.value is None
    assert scale.why_none == (
        "measured on 1 steps, but the estimate of |G|² (the gradient is lost in the noise) is not "
        "positive: too few steps for this model's gradients; raise noise_scale_steps"
    )
    scale.update(g2=30.0, s=-40.0)
    assert scale.value is None and "estimate of S (the noise)" in str(scale.why_none)
    scale.update(g2=30.0, s=400.0)
    assert scale.value is not None and scale.why_none is None


def test_noise_scale_averages_noisy_steps_to_the_truth():
    rng = np.random.default_rng(0)
    scale = NoiseScale()
    for _ in range(400):
        scale.update(g2=4.0 + rng.normal(0, 0.5), s=400.0 + rng.normal(0, 100))
    assert scale.value == pytest.approx(100.0, rel=0.1)


@pytest.mark.parametrize(
    ("noise", "batch", "expected"),
    [(0.0, 256, 0.25), (1e12, 256, 1.0), (64.0, 64, 1.0), (192.0, 256, 4 / 7)],
)
def test_statistical_efficiency(noise, batch, expected):
    # E(B) = (B_noise + B0) / (B_noise + B), with B0 = 64.
    assert statistical_efficiency(noise, 64, batch) == pytest.approx(expected)


def test_goodput_is_throughput_times_efficiency():
    assert goodput(1000.0, 192.0, 64, 256) == pytest.approx(4000 / 7)
    with pytest.raises(ValueError):
        statistical_efficiency(float("nan"), 64, 128)


def test_goodput_policy_prefers_what_still_helps_per_sample():
    # 512 is faster, but far past the noise scale: most of its samples are wasted.
    trials = [
        make_trial(0, 128, loss=0.50, throughput=1000.0, goodput=900.0, gradient_noise_scale=500),
        make_trial(1, 512, loss=0.50, throughput=1800.0, goodput=700.0, gradient_noise_scale=500),
    ]
    assert run_recommend(trials)["trial_number"] == 1
    rec = run_recommend(trials, policy="goodput")
    assert (rec["trial_number"], rec["policy"], rec["goodput"]) == (0, "goodput", 900.0)
    assert rec["gradient_noise_scale"] == 500
    assert "critical_batch_size" not in rec  # the noise scale is the estimate: stored once


def test_goodput_policy_without_measurements_says_why():
    with pytest.raises(NoCompleteTrialError, match="no trial with a measured gradient noise"):
        run_recommend([make_trial(0, 128, loss=0.5, throughput=10.0)], policy="goodput")
