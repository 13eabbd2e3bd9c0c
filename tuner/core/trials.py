"""Which trials of a study are finished for good, which are taken, which must run again.

Pure predicates over Optuna ``FrozenTrial`` objects; the driver decides with them when a grid (or a
joint search's budget) is done and what a resumed search re-queues. A trial is:

* **settled** — COMPLETE, PRUNED, or FAIL for a reason a rerun would repeat (``timeout``,
  ``crashed``, ``error``): its grid point needs no more runs;
* **claimed** — settled, or RUNNING on some worker: nobody else should start it;
* **pending** — WAITING in the queue or RUNNING: a run of its grid point is on its way.

An interrupted trial, or one whose worker died (stale heartbeat), ends FAIL without being
settled: resuming runs its grid point again, once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from optuna.trial import FrozenTrial, TrialState

from tuner.core.recommend import grid_point, model_config, status_of

FINAL_FAILURES = frozenset({"timeout", "crashed", "error"})
"""FAIL statuses that a rerun would repeat: resuming does not run those grid points again."""

RunKey = tuple[Any, Any, str]
"""``(global_batch_size, lr_rule, model configuration)``: what one run measures."""


def is_settled(trial: FrozenTrial) -> bool:
    """Whether the trial's grid point needs no more runs."""
    if trial.state in (TrialState.COMPLETE, TrialState.PRUNED):
        return True
    return trial.state == TrialState.FAIL and status_of(trial) in FINAL_FAILURES


def is_claimed(trial: FrozenTrial) -> bool:
    """Whether the trial is settled or some worker is running it."""
    return trial.state == TrialState.RUNNING or is_settled(trial)


def is_pending(trial: FrozenTrial) -> bool:
    """Whether the trial waits in the queue or runs."""
    return trial.state in (TrialState.WAITING, TrialState.RUNNING)


def has_grid_point(trial: FrozenTrial) -> bool:
    """Whether the trial got its global batch and rule (a trial killed at birth has not)."""
    return None not in grid_point(trial)


def run_key(trial: FrozenTrial) -> RunKey:
    """The grid point and model configuration the trial runs."""
    return (*grid_point(trial), model_config(trial))


def settled_grid_points(trials: Iterable[FrozenTrial]) -> set[tuple[int, str]]:
    """The ``(global_batch_size, lr_rule)`` points that need no more runs."""
    return {
        (int(trial.params["global_batch_size"]), str(trial.params["lr_rule"]))
        for trial in trials
        if has_grid_point(trial) and is_settled(trial)
    }


def claimed_count(trials: Iterable[FrozenTrial]) -> int:
    """Trials that count against a joint search's budget: settled or running (queued ones count
    once they run; interrupted and dead workers' ones run again)."""
    return sum(1 for trial in trials if is_claimed(trial))


def has_unclaimed_work(trials: Sequence[FrozenTrial], grid: Iterable[tuple[int, str]]) -> bool:
    """Whether a queued trial waits, or a point of ``grid`` is neither settled nor running."""
    if any(trial.state == TrialState.WAITING for trial in trials):
        return True
    claimed = settled_grid_points(trials) | {
        grid_point(trial) for trial in trials if trial.state == TrialState.RUNNING
    }
    return any(point not in claimed for point in grid)


def has_budget_left(trials: Sequence[FrozenTrial], budget: int) -> bool:
    """Whether a queued trial waits, or fewer than ``budget`` trials are claimed."""
    if any(trial.state == TrialState.WAITING for trial in trials):
        return True
    return claimed_count(trials) < budget


def to_requeue(trials: Sequence[FrozenTrial]) -> list[FrozenTrial]:
    """The FAIL trials to run again: unsettled, with no settled or pending run of their grid point
    and model configuration, and not re-queued before; one per grid point."""
    done = {run_key(trial) for trial in trials if is_settled(trial)}
    pending = {run_key(trial) for trial in trials if is_pending(trial)}
    retried = {trial.system_attrs.get("failed_trial") for trial in trials}
    chosen = []
    for trial in trials:
        key = run_key(trial)
        if (
            trial.state == TrialState.FAIL
            and has_grid_point(trial)
            and key not in done
            and key not in pending
            and trial.number not in retried
        ):
            chosen.append(trial)
            pending.add(key)
    return chosen
