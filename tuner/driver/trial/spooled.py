"""Results that reached the spool but not the storage (:mod:`tuner.storage.spool`), recorded by
the next search of the study before it runs anything: on the trial while it is still RUNNING, on
its waiting copy when it was failed as stale and queued again (the point is not measured twice),
nowhere when it finished otherwise (the file just goes).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import FrozenTrial, Trial, TrialState

from tuner.core.configurations import status_of
from tuner.core.record import changes
from tuner.driver.observer import SearchObserver
from tuner.storage import spool
from tuner.storage.faults import StorageFaultError
from tuner.storage.guarded import guard_of, storage_call
from tuner.storage.places import locate

__all__ = ["record_spooled", "spool_outcome", "spooled_at", "spooled_line", "storage_faults"]


@contextlib.contextmanager
def storage_faults(study: optuna.Study, observer: SearchObserver) -> Iterator[None]:
    """Within the block, the storage's waiting lines go to ``observer``, and a storage fault
    ends the search as its one line, saying where the results it could not store wait."""
    guard = guard_of(study)
    if guard is not None:
        guard.notify = observer.note
    try:
        yield
    except StorageFaultError as fault:
        try:
            spooled = spooled_line(study)
        except OSError:
            spooled = None
        message = f"{fault}; {spooled}" if spooled else str(fault)
        raise StorageFaultError(message) from fault


def spool_outcome(
    trial: Trial, state: str, values: Sequence[float] | None, attrs: dict[str, Any]
) -> None:
    """Keep ``trial``'s outcome in the spool before the storage is asked to take it (only for a
    storage with a guard, :mod:`tuner.storage.guarded`: others have no outage to survive). A
    spool that cannot write (its disk full, read-only) is said once per search, and the outcome
    goes on to the storage."""
    guard = guard_of(trial.study)
    if guard is None:
        return
    record = {
        "study": trial.study.study_name,
        "number": trial.number,
        "state": state,
        "values": [float(v) for v in values] if values and state == "COMPLETE" else None,
        "attrs": attrs,
    }
    try:
        spool.write(guard.spool_folder, trial._trial_id, record)
    except OSError as exc:  # the safety net failing must never cost the result it holds
        if not guard.spool_failing:
            guard.notify(
                f"the spool {guard.spool_folder} cannot keep trial results "
                f"({exc.strerror or exc}): trial #{trial.number}'s goes to the storage alone, "
                "where a storage outage now would lose it; free space there or set "
                "TUNER_SPOOL_DIR"
            )
        guard.spool_failing = True


def spooled_line(study: optuna.Study) -> str | None:
    """What the user reads about ``study``'s results waiting in the spool (``None``: none)."""
    guard = guard_of(study)
    return _line(guard.spool_folder, study.study_name) if guard is not None else None


def spooled_at(storage_url: str, study_name: str) -> str | None:
    """:func:`spooled_line` for a study read without writing (``tuner show``)."""
    return _line(spool.spool_folder(locate(storage_url)), study_name)


def _line(folder: Path, study_name: str) -> str | None:
    waiting = spool.pending(folder, study_name)
    if not waiting:
        return None
    numbers = ", ".join(f"#{r['number']}" for r in waiting)
    return (
        f"{len(waiting)} measured result(s) ({numbers}) are spooled in {folder}; the next "
        "`tuner search` of this study records them"
    )


def record_spooled(study: optuna.Study, note: Callable[[str], None]) -> int:
    """Record every spooled result of ``study``; how many were recorded."""
    guard = guard_of(study)
    storage = guard.storage() if guard is not None else None
    if guard is None or storage is None:
        return 0
    folder = guard.spool_folder
    recorded = 0
    for entry in spool.pending(folder, study.study_name):
        trial_id = int(entry["trial_id"])
        target = storage_call(study, _target, study, storage, trial_id)
        if target is not None and _write(study, storage, target, entry):
            recorded += 1
            note(
                f"trial {entry['number']}: its measured result, spooled when the storage "
                f"failed, is recorded now (as trial {target.number}), not measured again"
            )
        spool.discard(folder, trial_id)
    return recorded


def _target(study: optuna.Study, storage: Any, trial_id: int) -> FrozenTrial | None:
    """The trial that takes a spooled result: the trial itself while RUNNING, its waiting
    copy when it was failed as stale; ``None`` when the result is stored or superseded."""
    try:
        trial = storage.get_trial(trial_id)
    except KeyError:
        return None
    if trial.state == TrialState.RUNNING:
        return trial
    if trial.state != TrialState.FAIL or status_of(trial) != "unknown":
        return None  # stored after all (a failure tuner recorded has a FAIL status)
    for other in study.get_trials(deepcopy=False, states=(TrialState.WAITING,)):
        if other.system_attrs.get("failed_trial") == trial.number:
            return other
    return None


def _write(study: optuna.Study, storage: Any, trial: FrozenTrial, entry: dict[str, Any]) -> bool:
    """``entry``'s attributes, state and values on ``trial``; ``False`` when another worker
    took the trial meanwhile. Each write is a storage call of its own (a retried claim must not
    claim twice)."""
    trial_id = trial._trial_id
    try:
        if trial.state == TrialState.WAITING and not storage_call(
            study, storage.set_trial_state_values, trial_id, TrialState.RUNNING
        ):
            return False
        # On top of the trial's own record (a queued copy holds the configuration too): each
        # stored group whole, so a trial of the earlier layout is read alike afterwards.
        for key, value in changes(trial, entry["attrs"]).items():
            storage_call(study, storage.set_trial_user_attr, trial_id, key, value)
        state = TrialState[entry["state"]]
        values = entry["values"] if state == TrialState.COMPLETE else None
        return bool(storage_call(study, storage.set_trial_state_values, trial_id, state, values))
    except optuna.exceptions.UpdateFinishedTrialError:
        return False
