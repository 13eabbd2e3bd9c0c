"""The measured law with the sweep's early stops (issue 32): a rate stopped early as dominated by
the best at its own batch is a wall beside the best (a rate known worse), never a point whose
partial loss is fitted as final; a rate stopped against another batch is left out; under a loss
target lr* is the rate that reaches it first. Pure: hand-made trials, no training."""

from __future__ import annotations

import math
from typing import Any

import pytest
from optuna.distributions import CategoricalDistribution
from optuna.trial import FrozenTrial, TrialState, create_trial

from tuner.core.lr_law import best_rate, law_from_points
from tuner.core.recommend._law import study_law

RATES = [0.01, 0.02, 0.04, 0.08, 0.16]


def test_a_stopped_rate_above_the_best_brackets_lr_star_up_to_it() -> None:
    """Finished at 0.01, 0.02, 0.04 (best 0.04); 0.08 and 0.16 stopped: lr* is 0.04, between
    the half-step below it and the stopped 0.08 — not the edge of the sweep (a bound), which it
    would be if the stopped rates vanished."""
    points = [(0.01, 0.9), (0.02, 0.5), (0.04, 0.3)]
    star = best_rate(64, points, worse=[0.08, 0.16])
    assert star is not None and star.censored is None
    assert star.method == "beside a worse rate" and star.stopped == 2
    assert star.lr == pytest.approx(0.04)
    assert star.high == pytest.approx(0.08)
    assert star.low == pytest.approx(math.sqrt(0.02 * 0.04))
    vanished = best_rate(64, points)
    assert vanished is not None and vanished.censored == "above"


def test_a_stopped_rate_below_the_smallest_finished_keeps_the_best_from_a_bound() -> None:
    """0.01 and 0.02 stopped, 0.04 best, 0.08 and 0.16 finished: lr* lies between 0.02 and the
    half-step above 0.04."""
    star = best_rate(64, [(0.04, 0.3), (0.08, 0.5), (0.16, 0.9)], worse=[0.01, 0.02])
    assert star is not None and star.censored is None and star.method == "beside a worse rate"
    assert star.low == pytest.approx(0.02) and star.lr == pytest.approx(0.04)
    assert star.high == pytest.approx(math.sqrt(0.04 * 0.08))


def test_stopped_rates_on_both_sides_bracket_the_one_finished_rate() -> None:
    star = best_rate(64, [(0.04, 0.3)], worse=[0.02, 0.08])
    assert star is not None and (star.low, star.lr, star.high) == pytest.approx((0.02, 0.04, 0.08))
    assert best_rate(64, [], worse=RATES) is None  # nothing finished: no lr*


def test_a_diverged_wall_is_a_cliff_and_a_stopped_one_beside_it_changes_nothing() -> None:
    points = [(0.01, 0.9), (0.02, 0.5), (0.04, 0.3), (0.08, math.inf)]
    star = best_rate(64, points, worse=[0.16])
    assert star is not None and star.method == "beside a cliff" and star.high == pytest.approx(0.08)


def test_the_law_counts_stopped_rates_and_says_so() -> None:
    """Two batches, each with its far rates stopped: both have an lr*, alpha is fitted, and the
    words and the JSON say how many rates were stopped."""
    points = {
        64: [(0.02, 0.5), (0.04, 0.3), (0.08, 0.4)],
        256: [(0.08, 0.5), (0.16, 0.3), (0.32, 0.4)],
    }
    law = law_from_points(points, worse_by_batch={64: [0.01, 0.16], 256: [0.64]})
    assert law is not None and law.alpha is not None
    assert [s.stopped for s in law.stars] == [2, 1]
    block = law.to_dict()
    assert block["stopped_points_by_batch"] == {"64": 2, "256": 1}
    assert block["lr_star_criterion_by_batch"] == {"64": "final loss", "256": "final loss"}
    assert "3 rate(s) stopped early as worse than the best at their batch" in law.words


def _trial(number: int, batch: int, lr: float, status: str, **attrs: Any) -> FrozenTrial:
    """A trial at ``batch`` and ``lr`` (a sweep point) that ended with ``status``."""
    ok = status == "ok"
    loss = attrs.pop("loss", 0.5)
    trial = create_trial(
        state=TrialState.COMPLETE if ok else TrialState.PRUNED,
        values=[loss, 1000.0] if ok else None,
        params={"global_batch_size": batch, "lr_rule": f"sweep-{number}/9"},
        distributions={
            "global_batch_size": CategoricalDistribution([batch]),
            "lr_rule": CategoricalDistribution([f"sweep-{number}/9"]),
        },
        user_attrs={
            "global_batch_size": batch,
            "learning_rate": lr,
            "lr_rule": f"sweep-{number}/9",
            "status": status,
            "final_loss": loss,
            **attrs,
        },
    )
    trial.number = number
    return trial


def test_a_dominated_trial_partial_loss_is_not_fitted_as_final() -> None:
    """At batch 64 the rate 0.08 stopped early at a partial loss of 0.05 — lower than any final
    loss (its run was cut short, but think of a curve evaluated on another scale): fitted as
    final it would be lr*; as a wall it bounds lr* from above instead."""
    trials = [
        _trial(0, 64, 0.01, "ok", loss=0.9),
        _trial(1, 64, 0.02, "ok", loss=0.5),
        _trial(2, 64, 0.04, "ok", loss=0.3),
        _trial(3, 64, 0.08, "dominated", loss=0.05, dominance={"reference_trial": 2}),
    ]
    law = study_law(trials)
    assert law is not None
    (star,) = law.stars
    assert star.lr == pytest.approx(0.04) and star.high == pytest.approx(0.08)
    assert star.stopped == 1 and star.censored is None


def test_a_trial_stopped_against_another_batch_is_left_out() -> None:
    """Stopped against batch 32's best: it says nothing about batch 64's best rate."""
    trials = [
        _trial(0, 32, 0.01, "ok", loss=0.1),
        _trial(1, 64, 0.01, "ok", loss=0.9),
        _trial(2, 64, 0.02, "ok", loss=0.5),
        _trial(3, 64, 0.04, "ok", loss=0.3),
        _trial(4, 64, 0.08, "dominated", loss=0.6, dominance={"reference_trial": 0}),
    ]
    law = study_law(trials)
    assert law is not None
    star = next(s for s in law.stars if s.batch == 64)
    assert star.stopped == 0 and star.censored == "above"


def test_under_a_target_lr_star_is_the_rate_that_reaches_it_first() -> None:
    """Final losses all sit near the target (trials stop there); the times differ: 0.04 reaches
    it in 2 s, 0.02 and 0.08 in 4 s, 0.01 never does (a wall), 0.16 was stopped by the time
    rule. lr* by time is the parabola's vertex near 0.04, with no seed noise assumed."""
    target = {"target_loss": 0.1}

    def timed(n: int, lr: float, seconds: float | None, loss: float) -> FrozenTrial:
        reached = {"reached_target": seconds is not None, "time_to_target_s": seconds}
        return _trial(n, 64, lr, "ok", loss=loss, **target, **reached)

    trials = [
        timed(0, 0.01, None, 0.3),
        timed(1, 0.02, 4.0, 0.099),
        timed(2, 0.04, 2.0, 0.0999),
        timed(3, 0.08, 4.0, 0.09),
        _trial(4, 64, 0.16, "dominated", loss=0.2, dominance={"reference_trial": 2}, **target),
    ]
    law = study_law(trials, {"final_losses": [0.1, 0.2, 0.3]})
    assert law is not None
    (star,) = law.stars
    assert star.criterion == "time to target" and star.method != "seed noise bootstrap"
    assert star.lr == pytest.approx(0.04, rel=1e-6)
    assert star.stopped == 2  # 0.01 never reached the target; 0.16 was stopped
    assert "lr* by time to the target at batch 64" in law.words
    by_loss = study_law([timed(n, lr, None, loss) for n, lr, loss in _losses()])
    assert by_loss is not None and by_loss.stars[0].criterion == "final loss"


def _losses() -> list[tuple[int, float, float]]:
    """No rate reached the target: lr* by the final loss (0.04 lowest)."""
    return [(0, 0.02, 0.5), (1, 0.04, 0.3), (2, 0.08, 0.4)]
