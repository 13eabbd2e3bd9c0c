"""The range test's pure parts (:mod:`tuner.core.lr_find`): the ramp, the bias-corrected EMA,
the divergence stop and the suggestion — on synthetic curves (a spike at the start, heavy
noise) and on minibatch SGD on a noisy quadratic simulated in NumPy, whose divergence rate and
best fixed rate are known."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tuner.core import lr_find as lf
from tuner.core.errors import ConfigError
from tuner.core.options import DEFAULT_MAX_LR, DEFAULT_MIN_LR, LR_FIND_STEPS, naming


def _curve(
    lrs: list[float], rng: np.random.Generator | None = None, noise: float = 0.0
) -> list[float]:
    """A range test's typical loss: flat at 2, a fall centred at lr 1e-2 to 0.2, a blow-up past
    lr 1 (times ``1 + noise * N(0, 1)`` per step)."""
    out = []
    for lr in lrs:
        x = math.log10(lr)
        loss = 0.2 + 1.8 / (1 + math.exp(3 * (x + 2))) + (50 * (lr - 1) if lr > 1 else 0)
        out.append(loss * (1 + noise * rng.normal()) if rng is not None else loss)
    return out


def test_the_ramp_is_geometric_from_min_to_max() -> None:
    lrs = lf.ramp(1e-6, 1.0, 61)
    assert lrs[0] == pytest.approx(1e-6) and lrs[-1] == pytest.approx(1.0)
    assert lrs[10] == pytest.approx(1e-5)  # 10 steps per decade


def test_the_ema_is_bias_corrected() -> None:
    assert lf.smooth([3.0, 3.0, 3.0], 0.9) == pytest.approx([3.0, 3.0, 3.0])
    assert lf.smooth([1.0], 0.98) == [pytest.approx(1.0)]


def test_a_clean_curve_is_suggested_at_its_steepest_fall_in_log_lr() -> None:
    lrs = lf.ramp(1e-7, 10, 200)
    finding = lf.suggest(lrs, _curve(lrs))
    assert finding.suggestion is not None and finding.slope is not None
    assert 10**-2.6 < finding.suggestion < 10**-1.4  # the logistic's steepest point is 1e-2
    assert finding.slope < 0
    assert finding.diverged_lr is not None and 1 < finding.diverged_lr < 3
    assert finding.min_loss_lr is not None and finding.suggestion < finding.min_loss_lr


def test_an_early_spike_does_not_make_the_suggestion_nor_stop_the_run() -> None:
    lrs = lf.ramp(1e-7, 10, 200)
    losses = _curve(lrs)
    losses[1:4] = [40.0, 20.0, 9.0]  # a fresh model's first steps: a spike, then a fall back
    finding = lf.suggest(lrs, losses)
    assert finding.suggestion is not None and 10**-2.6 < finding.suggestion < 10**-1.4
    watch = lf.DivergenceWatch(200)
    assert not any(watch.add(loss) for loss in losses[:100])


def test_a_spike_after_the_skipped_steps_is_a_recovery_not_a_descent() -> None:
    lrs = lf.ramp(1e-7, 10, 200)
    losses = _curve(lrs)
    losses[40:46] = [7.0] * 6  # a burst well inside the flat part; its fall back is not a fall
    finding = lf.suggest(lrs, losses)
    assert finding.suggestion is not None and 10**-2.6 < finding.suggestion < 10**-1.4


def test_a_noisy_curve_keeps_its_suggestion_near_the_fall() -> None:
    lrs = lf.ramp(1e-7, 10, 300)
    for seed in range(5):
        losses = _curve(lrs, np.random.default_rng(seed), noise=0.25)
        finding = lf.suggest(lrs, losses)
        assert finding.suggestion is not None
        assert 10**-3 < finding.suggestion < 10**-1, (seed, finding.suggestion)


def test_a_flat_curve_suggests_nothing_and_says_why() -> None:
    lrs = lf.ramp(1e-7, 1e-5, 100)
    finding = lf.suggest(lrs, [2.0 + 0.01 * math.sin(i) for i in range(100)])
    assert finding.suggestion is None
    assert finding.reason is not None and "--max-lr" in finding.reason


def test_divergence_stops_at_four_times_the_minimum_or_a_nan() -> None:
    watch = lf.DivergenceWatch(100)
    stops = [watch.add(loss) for loss in [1.0] * 30 + [50.0] * 10]
    assert not any(stops[:30]) and stops.index(True) >= 30
    watch = lf.DivergenceWatch(100)
    assert [watch.add(x) for x in [1.0] * 20 + [math.nan]][-1]


def test_a_run_cut_short_by_divergence_is_read_up_to_it() -> None:
    lrs = lf.ramp(1e-7, 10, 200)
    losses = [*_curve(lrs)[:150], math.inf]
    finding = lf.suggest(lrs[:151], losses, planned_steps=200)
    assert finding.diverged_lr == lrs[150]
    assert finding.suggestion is not None and finding.suggestion < lrs[150]


@pytest.mark.parametrize(
    ("min_lr", "max_lr", "steps", "flag"),
    [
        (0.0, 1.0, 100, "--min-lr"),
        (1e-3, math.inf, 100, "--max-lr"),
        (1.0, 1e-3, 100, "--max-lr"),
        (1e-7, 1.0, 5, "--steps"),
    ],
)
def test_a_bad_range_is_one_line_naming_the_flag(
    min_lr: float, max_lr: float, steps: int, flag: str
) -> None:
    with pytest.raises(ConfigError, match=flag):
        lf.check_range(min_lr, max_lr, steps)


def test_the_spec_line() -> None:
    assert lf.spec_line(0.003162) == "base_lr = 0.0032"


# The noisy quadratic model: linear regression on Gaussian inputs of known covariance, SGD on
# the mean squared error. Its curvature is 2 * eigenvalue; full-batch SGD diverges above
# 2 / (largest curvature) = 1 / largest eigenvalue.
EIGENVALUES = np.geomspace(1.0, 1e-2, 16)
NOISE, BATCH = 0.5, 64


def _sgd(lrs: list[float] | np.ndarray, seed: int, watch: lf.DivergenceWatch | None) -> list[float]:
    rng = np.random.default_rng(seed)
    w_star, w, losses = rng.normal(size=16), np.zeros(16), []
    for lr in lrs:
        x = rng.normal(size=(BATCH, 16)) * np.sqrt(EIGENVALUES)
        residual = x @ w - (x @ w_star + NOISE * rng.normal(size=BATCH))
        losses.append(float(np.mean(residual**2)))
        w = w - lr * 2 / BATCH * x.T @ residual
        if (watch is not None and watch.add(losses[-1])) or not np.isfinite(losses[-1]):
            break
    return losses


def _best_fixed_rate(steps: int) -> float:
    grid = np.geomspace(1e-3, 1.0, 31)
    finals = [np.mean([_sgd(np.full(steps, lr), s, None)[-1] for s in range(3)]) for lr in grid]
    return float(grid[int(np.nanargmin(np.nan_to_num(finals, nan=np.inf)))])


def test_on_the_noisy_quadratic_the_suggestion_is_below_divergence_and_near_the_best() -> None:
    diverges = 2 / (2 * EIGENVALUES.max())
    best = _best_fixed_rate(200)
    for seed in range(4):
        lrs = lf.ramp(DEFAULT_MIN_LR, DEFAULT_MAX_LR, LR_FIND_STEPS)
        losses = _sgd(lrs, seed, lf.DivergenceWatch(len(lrs)))
        finding = lf.suggest(lrs[: len(losses)], losses, planned_steps=len(lrs))
        assert finding.suggestion is not None
        assert finding.suggestion < diverges, (seed, finding.suggestion)
        assert best / 10 < finding.suggestion < best * 10, (seed, finding.suggestion, best)
        assert len(losses) < len(lrs)  # stopped at divergence, not run to 10


# A real flat curve: the built-in-methods guide's classifier (tests/workloads/sample_weights),
# RMSprop, 48 of a 60-step ramp from 1e-7 to 10 on 2 CPU replicas; the loss never falls before
# it diverges, but a few low batches right after the skipped steps made a "lasting" descent of
# the smoothed loss, suggested at 3.1e-6.
FLAT_NOISY = [2.494, 2.692, 2.576, 2.459, 2.793, 2.615, 2.773, 2.618, 2.684, 2.687, 2.504, 2.497]
FLAT_NOISY += [2.35, 2.488, 2.546, 2.604, 2.585, 2.479, 2.763, 2.59, 2.444, 2.629, 2.475, 2.605]
FLAT_NOISY += [2.648, 2.594, 2.498, 2.552, 2.395, 2.51, 2.574, 2.673, 2.456, 2.657, 2.65, 2.651]
FLAT_NOISY += [2.522, 2.607, 2.731, 3.176, 2.389, 3.982, 2.714, 2.532, 2.529, 2.438, 2.611, 67.66]


def test_a_fall_within_the_noise_is_no_suggestion() -> None:
    lrs = lf.ramp(1e-7, 10, 60)[: len(FLAT_NOISY)]
    finding = lf.suggest(lrs, FLAT_NOISY, planned_steps=60)
    assert finding.suggestion is None and finding.reason is not None
    assert finding.diverged_lr is not None  # the divergence is still read
    # the same curve with a real fall (a quarter of the loss) at 1e-3 is suggested there
    falling = [x if lr < 1e-3 else x - 0.6 for lr, x in zip(lrs, FLAT_NOISY, strict=True)]
    found = lf.suggest(lrs, falling, planned_steps=60)
    assert found.suggestion is not None and 1e-4 < found.suggestion < 1e-2


def test_a_reason_names_the_options_as_the_caller_does() -> None:
    """No lasting fall on a flat curve: the reason points the CLI to its flags and Python to
    its keywords."""
    rates = lf.ramp(1e-6, 1.0, 100)
    flat = [1.0] * 100
    assert "(--min-lr, --max-lr) or run more --steps" in str(lf.suggest(rates, flat).reason)
    with naming("lr-find", keywords=True):
        named = lf.suggest(rates, flat).reason
    assert named is not None and "(min_lr=, max_lr=) or run more steps=" in named
    assert "--" not in named
