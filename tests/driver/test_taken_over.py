"""A worker stalled past the heartbeat grace (SIGSTOP, a suspended VM) finds its trial failed and
re-queued by another worker: it drops its result and goes on instead of dying (found by the
soak)."""

from __future__ import annotations

import optuna
import pytest
from optuna.trial import TrialState

from tuner.core.configurations import status_of
from tuner.core.record import decode, store
from tuner.driver.observer import QuietObserver
from tuner.driver.trial.loop import _run_one
from tuner.storage import open_storage


class Notes(QuietObserver):
    def __init__(self) -> None:
        self.notes: list[str] = []

    def note(self, message: str) -> None:
        self.notes.append(message)


def study_in(tmp_path) -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    return optuna.create_study(
        storage=f"sqlite:///{tmp_path}/t.db", directions=["minimize", "maximize"]
    )


def test_a_result_for_a_trial_another_worker_failed_is_dropped_with_a_note(tmp_path):
    study = study_in(tmp_path)

    def stalled(trial: optuna.Trial, stored: object = None) -> tuple[float, float]:
        # What another worker's fail_stale_trials does while this one is stopped.
        study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
        return 0.5, 1000.0

    observer = Notes()
    _run_one(study, stalled, observer)  # type: ignore[arg-type]
    (trial,) = study.get_trials()
    assert trial.state == TrialState.FAIL and trial.values is None
    assert len(observer.notes) == 1 and "stale heartbeat" in observer.notes[0]


def test_other_errors_still_end_the_search(tmp_path):
    study = study_in(tmp_path)

    def broken(trial: optuna.Trial, stored: object = None) -> tuple[float, float]:
        raise ValueError("Cannot parse this")

    with pytest.raises(ValueError, match="Cannot parse"):
        _run_one(study, broken, Notes())  # type: ignore[arg-type]
    assert [t.state for t in study.get_trials()] == [TrialState.FAIL]  # told FAIL, then raised


def test_values_optuna_refuses_are_no_take_over(tmp_path):
    # A ValueError of Optuna's tell for a trial still RUNNING is not a trial another worker
    # ended (the storage says which): raised, no note.
    study = study_in(tmp_path)

    def not_a_number(trial: optuna.Trial, stored: object = None) -> tuple[float, float]:
        return float("nan"), 1000.0

    observer = Notes()
    with pytest.raises(ValueError):
        _run_one(study, not_a_number, observer)  # type: ignore[arg-type]
    assert observer.notes == []


def test_a_failed_run_of_a_trial_another_worker_failed_is_dropped_too(tmp_path):
    from tuner.core.errors import TrialFailed

    study = study_in(tmp_path)

    def stalled_then_failed(trial: optuna.Trial, stored: object = None) -> tuple[float, float]:
        study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
        raise TrialFailed("crashed")

    observer = Notes()
    _run_one(study, stalled_then_failed, observer)  # type: ignore[arg-type]
    assert [t.state for t in study.get_trials()] == [TrialState.FAIL]
    assert len(observer.notes) == 1


def test_a_record_written_before_a_stale_failure_is_not_read_as_the_outcome(tmp_path):
    # A trial's record is written before its state: a trial another worker failed in between
    # holds the record, but its state stays FAIL and its status reads "unknown", never "ok";
    # the worker goes on with the same note.
    url = f"sqlite:///{tmp_path}/tuner.db"
    study = optuna.create_study(
        storage=open_storage(url, create=True), directions=["minimize", "maximize"]
    )
    other_worker = open_storage(url, create=False)  # its own storage, as in its own process

    def stalled(trial: optuna.Trial, stored: object = None) -> tuple[float, float]:
        store(trial, {"status": "ok", "throughput": 1000.0})
        other_worker.set_trial_state_values(trial._trial_id, TrialState.FAIL)
        return 0.5, 1000.0

    observer = Notes()
    _run_one(study, stalled, observer)  # type: ignore[arg-type]
    (trial,) = study.get_trials()
    assert trial.state == TrialState.FAIL and trial.values is None
    assert decode(trial).status == "ok" and status_of(trial) == "unknown"
    assert len(observer.notes) == 1 and "stale heartbeat" in observer.notes[0]
