"""The child's side of time to target without TensorFlow: the windows a request with a target
trains, and when the check after each window stops training (a scripted validation loss)."""

from __future__ import annotations

import math

import pytest
from child_requests import run_request

from tuner.core.errors import WorkloadError
from tuner.core.target import CheckPlan
from tuner.worker import target
from tuner.worker.target import TargetCheck


def _request(**fields: object) -> object:
    given = {"target_loss": 0.3, "train_samples": 16_384, "cadence_batches": [64, 128]}
    return run_request(**{"epochs": None, **given, **fields})


def test_a_target_makes_the_windows_its_cadence() -> None:
    assert target.plan(_request(eval_every_samples=1_664), 64, None) == CheckPlan(1_664, 26, 9)
    # No cadence: the grid's default from the budget, epochs × n_train under an epochs budget.
    assert target.plan(_request(), 128, None) == CheckPlan(1_664, 13, 9)
    epochs = _request(train_samples=None, epochs=3)
    assert target.plan(epochs, 64, 4_096) == CheckPlan(1_280, 20, 9)
    # No target, or a fixed-step run (probe, validate): the windows stay as they are.
    assert target.plan(run_request(train_samples=16_384, epochs=None), 64, None) is None
    assert target.plan(_request(steps_per_epoch=5, epochs=1), 64, None) is None
    with pytest.raises(WorkloadError, match="no known size"):
        target.plan(epochs, 64, None)
    with pytest.raises(WorkloadError, match="not a multiple of 96"):
        target.plan(_request(eval_every_samples=1_664), 96, None)


def _run(losses: list[float], windows: int = 9) -> tuple[TargetCheck, int]:
    """Check after each window as the loop would; returns the check and the windows trained."""
    scripted = iter(losses)
    check = TargetCheck(CheckPlan(1_000, 10, windows), 0.3, lambda: next(scripted))
    trained = 0
    for _ in range(windows):
        trained += 1
        if not check():
            break
    return check, trained


def test_training_stops_at_the_first_check_at_or_below_the_target() -> None:
    check, trained = _run([0.5, 0.4, 0.3, 0.2])
    assert trained == 3
    fields = check.fields([3.0, 1.0, 1.0])
    assert fields["reached_target"] is True
    assert fields["samples_to_target"] == 3_000
    assert fields["time_to_target_s"] == pytest.approx(3.0)  # 5 s less 2 s of compilation
    assert fields["compile_s"] == pytest.approx(2.0)
    assert fields["target_curve"] == [[1_000, 0.5], [2_000, 0.4], [3_000, 0.3]]
    assert (fields["target_loss"], fields["eval_every_samples"]) == (0.3, 1_000)
    assert check.final_loss == 0.3  # the last check is the final loss: no second evaluation


def test_reached_at_the_first_check_trains_one_more_window_for_timing() -> None:
    check, trained = _run([0.25, 0.2, 0.1])
    assert trained == 2  # the second window is the run's one steady window
    fields = check.fields([2.5, 1.0])
    assert fields["samples_to_target"] == 1_000  # still the first check
    assert fields["time_to_target_s"] == pytest.approx(1.0)  # the first window less compilation
    assert check.final_loss == 0.2


def test_a_target_not_reached_trains_the_whole_budget() -> None:
    check, trained = _run([0.5, 0.45, 0.4, 0.35], windows=4)
    assert trained == 4
    fields = check.fields([2.0, 1.0, 1.0, 1.0])
    assert fields["reached_target"] is False
    assert fields["samples_to_target"] is None and fields["time_to_target_s"] is None
    assert [samples for samples, _ in fields["target_curve"]] == [1_000, 2_000, 3_000, 4_000]


def test_a_non_finite_validation_loss_stops_training() -> None:
    check, trained = _run([0.5, math.nan, 0.1])
    assert trained == 2
    assert math.isnan(check.final_loss)  # the trial reports it as diverged
    assert check.fields([1.0, 1.0])["reached_target"] is False
