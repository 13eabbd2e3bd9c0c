"""Which trials of a study are finished for good, which are taken, which must run again.

Pure predicates over Optuna ``FrozenTrial`` objects. A trial is **settled** when COMPLETE, PRUNED,
or FAIL for a reason a rerun would repeat (:data:`FINAL_FAILURES`); **claimed** when settled or
RUNNING; **pending** when WAITING or RUNNING. An interrupted trial, or one whose worker died, ends
FAIL unsettled: resuming runs its grid point again, once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from optuna.trial import FrozenTrial, TrialState

from tuner.core.configurations import INFEASIBLE, grid_point, is_complete, model_config, status_of
from tuner.core.errors import AllDivergedError, NoCompleteTrialError
from tuner.core.record import TrialRecord, decode

FINAL_FAILURES = frozenset({"timeout", "crashed", "error"})
"""FAIL statuses that a rerun would repeat: resuming does not run those grid points again."""

RunKey = tuple[Any, ...]
"""``(global_batch_size, lr_rule[, precision], model configuration)``: what one run measures."""

GridPoint = tuple[Any, ...]
"""``(global_batch_size, lr_rule[, precision])`` (:func:`tuner.core.configurations.grid_point`)."""


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
    """Whether the trial got its grid point (a trial killed at birth has not)."""
    return None not in grid_point(trial)


def run_key(trial: FrozenTrial) -> RunKey:
    """The grid point and model configuration the trial runs."""
    return (*grid_point(trial), model_config(trial))


def settled_grid_points(trials: Iterable[FrozenTrial]) -> set[GridPoint]:
    """The grid points (:data:`GridPoint`) that need no more runs."""
    return {
        (int(batch), str(rule), *rest)
        for batch, rule, *rest in (
            grid_point(t) for t in trials if has_grid_point(t) and is_settled(t)
        )
    }


def claimed_count(trials: Iterable[FrozenTrial]) -> int:
    """Trials that count against a joint search's budget: settled or running."""
    return sum(1 for trial in trials if is_claimed(trial))


class GridProgress:
    """What of a ``grid`` is left to claim, at a cost flat in the study's size (issue 19): a
    finished trial never changes, so later calls look again only at unfinished and new trials."""

    def __init__(self, grid: Iterable[GridPoint]) -> None:
        self._grid = list(grid)
        self._settled: set[GridPoint] = set()
        self._seen: set[int] = set()
        """Numbers of the finished trials already looked at."""

    def has_unclaimed_work(self, trials: Sequence[FrozenTrial]) -> bool:
        """Whether :meth:`unclaimed` finds any run left in ``trials``."""
        return self.unclaimed(trials) > 0

    def unclaimed(self, trials: Sequence[FrozenTrial]) -> int:
        """Runs left to claim in ``trials``: queued trials, and grid points neither settled nor
        running (a queued trial's point may count twice)."""
        waiting, running = 0, set()
        for trial in trials:
            if trial.number in self._seen:
                continue
            if trial.state.is_finished():
                self._seen.add(trial.number)
                self._settled |= settled_grid_points([trial])
            elif trial.state == TrialState.WAITING:
                waiting += 1
            elif trial.state == TrialState.RUNNING:
                running.add(grid_point(trial))
        free = sum(point not in self._settled and point not in running for point in self._grid)
        return waiting + free


def has_budget_left(trials: Sequence[FrozenTrial], budget: int) -> bool:
    """Whether a queued trial waits, or fewer than ``budget`` trials are claimed."""
    if any(trial.state == TrialState.WAITING for trial in trials):
        return True
    return claimed_count(trials) < budget


def to_requeue(trials: Sequence[FrozenTrial]) -> list[FrozenTrial]:
    """The FAIL trials to run again: unsettled, with no settled or pending run of their key, and
    not re-queued before; one per grid point. Asked before every trial: cheap when none is."""
    retried = {trial.system_attrs.get("failed_trial") for trial in trials}
    candidates = [
        trial
        for trial in trials
        if trial.state == TrialState.FAIL
        and not is_settled(trial)  # a settled trial's own run key is done
        and has_grid_point(trial)
        and trial.number not in retried
    ]
    if not candidates:
        return []
    points = {grid_point(trial) for trial in candidates}
    near = [trial for trial in trials if grid_point(trial) in points]  # the only shared keys
    done = {run_key(trial) for trial in near if is_settled(trial)}
    pending = {run_key(trial) for trial in near if is_pending(trial)}
    chosen = []
    for trial in candidates:
        key = run_key(trial)
        if key not in done and key not in pending:
            chosen.append(trial)
            pending.add(key)
    return chosen


HEARTBEAT_S = "heartbeat_s"
"""The user attribute with the heartbeat interval of the worker that runs the trial (0: off)."""


def died_unborn(
    trial: FrozenTrial, now: datetime, grace_s: float, *, silent_for_s: float | None = None
) -> bool:
    """Whether ``trial`` is RUNNING and its worker died before its first heartbeat (Optuna's
    stale check never fails it). ``silent_for_s``: how long this process has seen it without a
    heartbeat, on its own clock (the start is stamped by another host's); ``None`` where the
    storage cannot say: then only a trial with nothing written, older than the grace, counts
    (a live worker writes its configuration at once)."""
    if not may_be_unborn(trial) or trial.datetime_start is None:
        return False
    if silent_for_s is not None:
        return silent_for_s > grace_s
    if trial.params or decode(trial) != TrialRecord() or trial.system_attrs:
        return False
    return (now - trial.datetime_start).total_seconds() > grace_s


def may_be_unborn(trial: FrozenTrial) -> bool:
    """Whether ``trial`` is RUNNING under a worker that beats (one :func:`died_unborn` may fail)."""
    return trial.state == TrialState.RUNNING and decode(trial).configuration.heartbeat_s != 0


def all_diverged(trials: Sequence[FrozenTrial]) -> bool:
    """Whether no trial completed, one diverged and every other ran out of memory."""
    statuses = [status_of(trial) for trial in trials if is_settled(trial)]
    if any(map(is_complete, trials)) or "diverged" not in statuses:
        return False
    # Trials too large to train at all say nothing about divergence.
    return all(status == "diverged" or status in INFEASIBLE for status in statuses)


def nothing_completed(
    study_name: str, trials: Sequence[FrozenTrial]
) -> NoCompleteTrialError | None:
    """The error that says why no trial completed, or ``None`` when one did."""
    if any(map(is_complete, trials)):
        return None
    if all_diverged(trials):
        return AllDivergedError(_diverged_message(study_name, trials))
    counts = Counter(status_of(trial) for trial in trials)
    ended = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "no trial"
    return NoCompleteTrialError(
        f"no trial of study {study_name!r} completed ({ended}): the note column of the table "
        "says why each ended"
    )


def _diverged_message(study_name: str, trials: Sequence[FrozenTrial]) -> str:
    diverged = [trial for trial in trials if status_of(trial) == "diverged"]
    learned = [decode(t).learning_rate for t in diverged]
    rates = sorted(float(r) for r in learned if isinstance(r, int | float))
    span = f" at learning rate {_span(rates)}" if rates else ""
    oom = sum(1 for trial in trials if status_of(trial) in INFEASIBLE)
    which = f"that fit in memory ({oom} ran out of memory) " if oom else ""
    return (
        f"every trial of study {study_name!r} {which}diverged: {len(diverged)} trial(s){span} "
        "ended with a NaN or infinite loss. Likeliest causes: a learning rate too high (lower "
        "base_lr or --base-lr; the linear rule scales it up with the batch), or bad data (NaN, "
        "inf or huge values in x or y, labels the loss cannot take)"
    )


def _span(values: list[float]) -> str:
    low, high = f"{values[0]:.3g}", f"{values[-1]:.3g}"
    return low if low == high else f"{low} to {high}"
