"""The adaptive LR sweep's pure rule (issue 32): a sweep rate is skipped once a finished rate
strictly between the best at its batch and it is worse than the best; the order a batch's rules
train in; and the assumption it rests on (one minimum in log lr) checked on the noisy quadratic
model's exactly computed loss."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tuner.core.adaptive_sweep import bracketed, neighbours_needed, visit_rank
from tuner.core.scaling import scaled_learning_rate, sweep_rules
from tuner.workloads import noisy_quadratic as nqm

RATES = [0.01, 0.02, 0.04, 0.08, 0.16]


def test_a_rate_beyond_a_worse_one_is_skipped_on_that_side_only() -> None:
    points = [(0.04, 0.3), (0.08, 0.5)]  # best 0.04, 0.08 worse above it
    reason = bracketed(0.16, points)
    assert reason is not None and reason.startswith("bracketed: ")
    assert "0.04" in reason and "above" in reason and "0.08" in reason
    assert bracketed(0.02, points) is None  # below the best: nothing between, train it
    assert bracketed(0.01, points) is None


def test_below_too_and_a_rate_next_to_the_best_is_always_trained() -> None:
    points = [(0.02, 0.6), (0.04, 0.3)]
    assert bracketed(0.01, points) is not None
    assert bracketed(0.08, points) is None  # the neighbour above: the fit needs it


def test_at_the_edge_the_sweep_keeps_expanding() -> None:
    """The best is the largest rate tried: every rate above is trained, in turn, to the edge."""
    points = [(0.01, 0.9), (0.02, 0.5), (0.04, 0.3)]
    assert bracketed(0.08, points) is None and bracketed(0.16, points) is None
    assert bracketed(0.16, [*points, (0.08, 0.2)]) is None  # 0.08 the new best: go on


def test_nothing_finished_or_the_best_itself_trains() -> None:
    assert bracketed(0.16, []) is None
    assert bracketed(0.04, [(0.04, 0.3), (0.08, 0.5)]) is None  # a copy of the best
    assert bracketed(math.nan, [(0.04, 0.3), (0.08, 0.5)]) is None


def test_a_tie_is_not_worse() -> None:
    """0.04 and 0.08 tie: lr* may lie between them or just past either; nothing is bracketed."""
    points = [(0.04, 0.3), (0.08, 0.3)]
    assert bracketed(0.16, points) is None and bracketed(0.02, points) is None


@pytest.mark.parametrize("value", [math.inf, math.nan])
def test_a_diverged_or_nan_neighbour_is_worse(value: float) -> None:
    assert bracketed(0.16, [(0.04, 0.3), (0.08, value)]) is not None


def test_a_rate_stopped_as_dominated_is_worse() -> None:
    """0.08 stopped early, dominated by the best at its batch: a wall, as in the law's fit."""
    assert bracketed(0.16, [(0.04, 0.3)], worse=[0.08]) is not None
    assert bracketed(0.02, [(0.04, 0.3)], worse=[0.08]) is None


def test_a_better_rate_between_brackets_nothing() -> None:
    """0.08 is the best; 0.04 between it and 0.02 is worse, but 0.16 has nothing between."""
    points = [(0.04, 0.3), (0.08, 0.2)]
    assert bracketed(0.02, points) is not None
    assert bracketed(0.16, points) is None


def test_without_the_seed_noise_two_worse_rates_a_side() -> None:
    """No seed runs: lr*'s interval comes from a parabola through the five finished rates around
    the best (lr_star._residual_sigma), so one more is trained before a skip, and more still on
    a side when the other side has fewer rates to give."""
    assert (
        neighbours_needed(True, 0),
        neighbours_needed(False, 3),
        neighbours_needed(False, 1),
    ) == (
        1,
        2,
        3,
    )
    sweep = [0.005, *RATES, 0.32]
    points = [(0.04, 0.3), (0.08, 0.5)]
    assert bracketed(0.16, points, seed_noise=False, planned=sweep) is None
    assert bracketed(0.32, [*points, (0.16, 0.9)], seed_noise=False, planned=sweep) is not None
    # the best one rate from the bottom: the window of five takes three above it
    low = [(0.005, 0.5), (0.01, 0.3), (0.02, 0.4), (0.04, 0.6)]
    assert bracketed(0.08, low, seed_noise=False, planned=sweep) is None
    assert bracketed(0.16, [*low, (0.08, 0.7)], seed_noise=False, planned=sweep) is not None


def test_fixed_rules_first_then_the_sweep_from_its_middle_out() -> None:
    rules = ("linear", "none", "sqrt", *sweep_rules(5))
    ordered = sorted(rules, key=visit_rank)
    assert ordered == [
        "linear", "none", "sqrt", "sweep-3/5", "sweep-2/5", "sweep-4/5", "sweep-1/5", "sweep-5/5"
    ]  # fmt: skip
    assert sorted(sweep_rules(4), key=visit_rank) == [
        "sweep-2/4", "sweep-3/4", "sweep-1/4", "sweep-4/4"
    ]  # fmt: skip


def test_the_sweep_middle_is_the_sqrt_rate() -> None:
    """For an odd sweep its middle rate is the sqrt rule's (a same_as copy when sqrt runs)."""
    for k in (1, 2, 4, 16):
        middle = scaled_learning_rate("sweep-3/5", 0.1, 8 * k, 8)
        assert middle == pytest.approx(scaled_learning_rate("sqrt", 0.1, 8 * k, 8))


@pytest.mark.parametrize(
    ("base", "multipliers", "base_lr"),
    [(8, (1, 2, 4, 8, 16), 0.15), (16, (1, 4), 0.3)],  # benchmarks/lr_law.py's two studies
)
def test_the_noisy_quadratic_loss_has_one_minimum_over_the_sweep(
    base: int, multipliers: tuple[int, ...], base_lr: float
) -> None:
    """The assumption, on the exact expected loss (no noise): falling to lr*, rising past it."""
    for m in multipliers:
        low = scaled_learning_rate("sweep-1/5", base_lr, base * m, base)
        high = scaled_learning_rate("sweep-5/5", base_lr, base * m, base)
        loss = nqm.expected_losses(np.geomspace(low, high, 400), base * m)
        j = int(np.argmin(loss))
        assert np.all(np.diff(loss[: j + 1]) < 0) and np.all(np.diff(loss[j:]) >= 0)
