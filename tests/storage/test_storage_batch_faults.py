"""Where tuner's batch writes (:mod:`tuner.storage.trial_attrs`) must still behave as Optuna's
own: a state change Optuna refuses stores none of the outcome attributes held for it; a write
that fails keeps them for the retry; an empty batch checks the trial as a single attribute does.
On a real SQLite file and on the real PostgreSQL server ``.ci/run`` starts."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

import optuna
import pytest
import sqlalchemy
from optuna.exceptions import UpdateFinishedTrialError
from optuna.trial import TrialState
from pg_databases import fresh_database

from tuner.storage.trial_attrs import TunerRDBStorage

OUTCOME = {"status": "ok", "throughput": 5.0}
LOCK_WAIT_S = 0.3
"""How long a write waits for a lock another connection holds before it fails."""


@dataclass
class Database:
    """A storage on a fresh database, and a way to make its next writes fail."""

    storage: TunerRDBStorage
    locked: Any  # () -> a context in which another connection holds a write lock


@contextmanager
def _sqlite(tmp_path) -> Iterator[Database]:
    path = tmp_path / "faults.db"
    storage = TunerRDBStorage(
        f"sqlite:///{path}", engine_kwargs={"connect_args": {"timeout": LOCK_WAIT_S}}
    )

    @contextmanager
    def locked() -> Iterator[None]:
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN EXCLUSIVE")  # no other connection may read or write
        try:
            yield
        finally:
            other.rollback()
            other.close()

    yield Database(storage, locked)
    storage.engine.dispose()


@contextmanager
def _postgres() -> Iterator[Database]:
    with fresh_database("tuner_faults") as url:
        wait = f"-c lock_timeout={int(LOCK_WAIT_S * 1000)}"
        storage = TunerRDBStorage(url, engine_kwargs={"connect_args": {"options": wait}})

        @contextmanager
        def locked() -> Iterator[None]:
            engine = sqlalchemy.create_engine(url)
            with engine.connect() as other:
                other.execute(sqlalchemy.text("LOCK TABLE trials IN ACCESS EXCLUSIVE MODE"))
                yield
                other.rollback()
            engine.dispose()

        try:
            yield Database(storage, locked)
        finally:
            storage.engine.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db(request, tmp_path) -> Iterator[Database]:
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    opened: AbstractContextManager[Database] = (
        _sqlite(tmp_path) if request.param == "sqlite" else _postgres()
    )
    with opened as database:
        yield database


def _running_trial(storage: TunerRDBStorage) -> int:
    study = optuna.create_study(storage=storage, study_name="faults", directions=["minimize"])
    return study.ask()._trial_id


def test_a_refused_state_change_stores_none_of_the_held_attrs(db):
    storage = db.storage
    trial_id = _running_trial(storage)
    storage.set_user_attrs_with_state(trial_id, OUTCOME)
    # Optuna refuses RUNNING for a trial that is not WAITING: it returns False inside its own
    # transaction, which then commits whatever else that transaction holds.
    assert storage.set_trial_state_values(trial_id, TrialState.RUNNING) is False
    assert storage.get_trial(trial_id).user_attrs == {}
    # They are still held for the trial's final state.
    assert storage.set_trial_state_values(trial_id, TrialState.COMPLETE, [1.0]) is True
    stored = storage.get_trial(trial_id)
    assert stored.state == TrialState.COMPLETE and stored.user_attrs == OUTCOME


def test_a_failed_state_write_keeps_the_held_attrs_for_the_retry(db):
    storage = db.storage
    trial_id = _running_trial(storage)
    storage.set_user_attrs_with_state(trial_id, OUTCOME)
    with db.locked(), pytest.raises(optuna.exceptions.StorageInternalError):
        storage.set_trial_state_values(trial_id, TrialState.COMPLETE, [1.0])
    assert storage.get_trial(trial_id).state == TrialState.RUNNING  # nothing was written
    assert storage.set_trial_state_values(trial_id, TrialState.COMPLETE, [1.0]) is True
    stored = storage.get_trial(trial_id)
    assert stored.state == TrialState.COMPLETE and stored.user_attrs == OUTCOME
    assert storage._with_state == {}  # written, so no longer held


def test_a_trial_finished_elsewhere_drops_the_held_attrs(db):
    storage = db.storage
    trial_id = _running_trial(storage)
    storage.set_user_attrs_with_state(trial_id, OUTCOME)
    storage.set_trial_state_values(trial_id, TrialState.FAIL)  # here held attrs go with it
    storage.set_user_attrs_with_state(trial_id, {"status": "late"})
    with pytest.raises(UpdateFinishedTrialError):  # no retry can ever write these
        storage.set_trial_state_values(trial_id, TrialState.COMPLETE, [1.0])
    assert storage._with_state == {}
    assert storage.get_trial(trial_id).user_attrs == OUTCOME


@pytest.mark.parametrize("kind", ["user", "system"])
def test_an_empty_batch_checks_the_trial_as_one_attribute_does(db, kind):
    storage = db.storage
    trial_id = _running_trial(storage)
    batch = getattr(storage, f"set_trial_{kind}_attrs")
    one = getattr(storage, f"set_trial_{kind}_attr")
    batch(trial_id, {})  # a running trial: nothing to write, nothing refused
    with pytest.raises(KeyError):
        one(trial_id + 1000, "k", 1)
    with pytest.raises(KeyError):
        batch(trial_id + 1000, {})
    storage.set_trial_state_values(trial_id, TrialState.COMPLETE, [1.0])
    with pytest.raises(UpdateFinishedTrialError):
        one(trial_id, "k", 1)
    with pytest.raises(UpdateFinishedTrialError):
        batch(trial_id, {})
