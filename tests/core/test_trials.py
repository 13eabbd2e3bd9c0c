"""Unit tests of the trial predicates (settled, claimed, pending, re-queue) over hand-made
Optuna ``FrozenTrial`` objects."""

from __future__ import annotations

from typing import Any

import pytest
from optuna.trial import FrozenTrial, TrialState, create_trial
from trials import make_trial

from tuner.core.trials import (
    FINAL_FAILURES,
    GridProgress,
    claimed_count,
    has_budget_left,
    has_grid_point,
    is_claimed,
    is_pending,
    is_settled,
    run_key,
    settled_grid_points,
    to_requeue,
)

GRID = [(64, "none"), (64, "sqrt"), (128, "none"), (128, "sqrt")]


def failed(number: int, batch: int, status: str, rule: str = "none", **attrs: Any) -> FrozenTrial:
    return make_trial(number, batch, rule, status=status, state=TrialState.FAIL, **attrs)


def unborn(number: int, state: TrialState = TrialState.FAIL) -> FrozenTrial:
    """A trial killed before its parameters were stored."""
    trial = create_trial(state=state, params={}, distributions={})
    trial.number = number
    return trial


# --- one trial ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("trial", "settled"),
    [
        (make_trial(0, 64, loss=1.0, throughput=10.0), True),
        (make_trial(0, 64, status="oom"), True),
        (make_trial(0, 64, status="oom-implied"), True),
        (make_trial(0, 64, status="diverged"), True),
        (failed(0, 64, "timeout"), True),
        (failed(0, 64, "crashed"), True),
        (failed(0, 64, "error"), True),
        (failed(0, 64, "interrupted"), False),
        (failed(0, 64, "unknown"), False),  # a dead worker's trial: failed by the heartbeat
        (make_trial(0, 64, state=TrialState.RUNNING), False),
        (make_trial(0, 64, state=TrialState.WAITING), False),
    ],
)
def test_is_settled(trial: FrozenTrial, settled: bool) -> None:
    assert is_settled(trial) is settled


def test_final_failures_are_the_ones_a_rerun_would_repeat() -> None:
    assert frozenset({"timeout", "crashed", "error"}) == FINAL_FAILURES


def test_claimed_is_settled_or_running() -> None:
    assert is_claimed(make_trial(0, 64, state=TrialState.RUNNING))
    assert is_claimed(failed(0, 64, "timeout"))
    assert not is_claimed(failed(0, 64, "interrupted"))
    assert not is_claimed(make_trial(0, 64, state=TrialState.WAITING))


def test_pending_is_waiting_or_running() -> None:
    assert is_pending(make_trial(0, 64, state=TrialState.WAITING))
    assert is_pending(make_trial(0, 64, state=TrialState.RUNNING))
    assert not is_pending(make_trial(0, 64, loss=1.0, throughput=1.0))
    assert not is_pending(failed(0, 64, "interrupted"))


def test_grid_point_and_run_key() -> None:
    assert has_grid_point(make_trial(0, 64, "sqrt", status="oom"))
    assert not has_grid_point(unborn(1))
    plain = make_trial(0, 64, "sqrt", status="oom")
    assert run_key(plain) == (64, "sqrt", "{}")
    shaped = make_trial(1, 64, "sqrt", status="oom", model_hyperparameters={"units": 8})
    assert run_key(shaped) != run_key(plain)
    assert run_key(shaped)[:2] == (64, "sqrt")


# --- a study's trials --------------------------------------------------------------------------


def test_settled_grid_points_skip_unsettled_and_unborn_trials() -> None:
    trials = [
        make_trial(0, 64, loss=1.0, throughput=10.0),
        make_trial(1, 64, "sqrt", status="oom"),
        failed(2, 128, "interrupted"),
        failed(3, 128, "crashed", "sqrt"),
        make_trial(4, 128, state=TrialState.RUNNING),
        unborn(5),
    ]
    assert settled_grid_points(trials) == {(64, "none"), (64, "sqrt"), (128, "sqrt")}


def test_unclaimed_work_while_a_point_is_neither_settled_nor_running() -> None:
    trials = [
        make_trial(0, 64, loss=1.0, throughput=10.0),
        make_trial(1, 64, "sqrt", status="oom"),
        failed(2, 128, "error", "sqrt"),
    ]
    assert GridProgress(GRID).has_unclaimed_work(trials)  # (128, none) never ran
    running = [*trials, make_trial(3, 128, state=TrialState.RUNNING)]
    assert not GridProgress(GRID).has_unclaimed_work(running)  # another worker has it
    interrupted = [*trials, failed(3, 128, "interrupted")]
    assert GridProgress(GRID).has_unclaimed_work(interrupted)
    queued = [*running, make_trial(4, 128, state=TrialState.WAITING)]
    assert GridProgress(GRID).has_unclaimed_work(queued)  # a queued trial always waits to run


def test_the_runs_left_to_claim_are_counted_for_the_last_runs_spare() -> None:
    progress = GridProgress(GRID)
    assert progress.unclaimed([]) == 4
    trials = [make_trial(0, 64, loss=1.0, throughput=10.0), make_trial(1, 64, "sqrt", status="oom")]
    assert progress.unclaimed(trials) == 2
    running = [*trials, make_trial(2, 128, state=TrialState.RUNNING)]
    assert progress.unclaimed(running) == 1  # the search's last run: no spare after it
    done = [*trials, make_trial(2, 128, loss=1.0, throughput=10.0)]
    assert progress.unclaimed(done) == 1
    queued = [*done, make_trial(3, 128, state=TrialState.WAITING)]
    assert progress.unclaimed(queued) == 2  # a queued trial counts on its own


def test_the_budget_counts_settled_and_running_trials() -> None:
    trials = [
        make_trial(0, 64, loss=1.0, throughput=10.0),
        make_trial(1, 128, status="oom"),
        make_trial(2, 64, "sqrt", state=TrialState.RUNNING),
        failed(3, 128, "interrupted", "sqrt"),
        make_trial(4, 128, "sqrt", state=TrialState.WAITING),
    ]
    assert claimed_count(trials) == 3
    assert has_budget_left(trials[:3], 4)
    assert not has_budget_left(trials[:4], 3)
    assert has_budget_left(trials, 3)  # the queued trial runs even past the budget


def test_an_interrupted_trial_is_requeued_once() -> None:
    stopped = failed(1, 128, "interrupted")
    trials = [make_trial(0, 64, loss=1.0, throughput=10.0), stopped]
    assert to_requeue(trials) == [stopped]
    copy = make_trial(2, 128, state=TrialState.WAITING)
    copy.system_attrs = {"failed_trial": 1}
    assert to_requeue([*trials, copy]) == []  # already queued
    copy_failed = failed(2, 128, "interrupted")
    copy_failed.system_attrs = {"failed_trial": 1}
    # The copy failed too: the copy is re-queued, the original never again.
    assert to_requeue([*trials, copy_failed]) == [copy_failed]


def test_requeue_skips_settled_pending_and_unborn_points() -> None:
    trials = [
        make_trial(0, 64, loss=1.0, throughput=10.0),
        failed(1, 64, "interrupted"),  # the point completed in trial 0
        failed(2, 128, "timeout"),  # settled: a rerun would time out again
        make_trial(3, 128, "sqrt", state=TrialState.RUNNING),
        failed(4, 128, "interrupted", "sqrt"),  # another worker runs the point
        unborn(5),
    ]
    assert to_requeue(trials) == []


def test_requeue_takes_one_trial_per_point_and_model_configuration() -> None:
    first = failed(0, 64, "interrupted")
    second = failed(1, 64, "unknown")
    other_model = failed(2, 64, "interrupted", model_hyperparameters={"units": 8})
    assert to_requeue([first, second, other_model]) == [first, other_model]
