"""A trial's attributes written in one transaction (:mod:`tuner.storage.trial_attrs`), on a
real SQLite file: the batch path is the one the installed Optuna takes, the stored trial and the
trial's own view hold the same values as ``set_user_attr`` one by one, and a trial another worker
already finished takes none of them; outcome attributes are stored with the trial's state, in
its transaction, and a trial another worker finished takes neither."""

from __future__ import annotations

import optuna
import pytest
import sqlalchemy
from optuna.trial import TrialState

from tuner.storage import open_storage
from tuner.storage.trial_attrs import (
    TunerRDBStorage,
    batch_writer,
    set_outcome_attrs,
    set_user_attrs,
)

ATTRS = {"global_batch_size": 128, "lr_rule": "linear", "devices": ["/cpu:0", "/cpu:1"]}


def _study(tmp_path, name: str = "batch") -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    storage = open_storage(f"sqlite:///{tmp_path}/t.db", create=True)
    return optuna.create_study(storage=storage, study_name=name, directions=["minimize"])


def test_the_installed_optuna_takes_the_one_transaction_path(tmp_path, monkeypatch):
    study = _study(tmp_path)
    assert isinstance(study._storage._backend, TunerRDBStorage)  # still under Optuna's cache
    writes: list[str] = []
    monkeypatch.setattr(
        TunerRDBStorage, "set_trial_user_attr", lambda *a, **k: writes.append("one by one")
    )
    seen = {}

    def objective(trial: optuna.Trial) -> float:
        assert batch_writer(trial) is not None
        set_user_attrs(trial, ATTRS)
        seen.update(trial.user_attrs)  # the trial's own view sees them at once
        return 1.0

    study.optimize(objective, n_trials=1)
    assert writes == []
    assert seen == ATTRS
    (stored,) = study.get_trials()
    assert stored.user_attrs == ATTRS


def test_batch_and_one_by_one_store_the_same(tmp_path):
    study = _study(tmp_path)
    plain = optuna.create_study(storage=f"sqlite:///{tmp_path}/plain.db", directions=["minimize"])
    for target in (study, plain):
        target.optimize(lambda trial: set_user_attrs(trial, ATTRS) or 1.0, n_trials=1)
    assert study.get_trials()[0].user_attrs == plain.get_trials()[0].user_attrs == ATTRS
    fixed = optuna.trial.FixedTrial({})
    set_user_attrs(fixed, ATTRS)  # a trial without a storage: one by one
    assert fixed.user_attrs == ATTRS


def test_a_trial_another_worker_finished_takes_none_of_them(tmp_path):
    study = _study(tmp_path)
    trial = study.ask()
    set_user_attrs(trial, {"status": "running-here"})
    study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)  # a stale worker's
    with pytest.raises(optuna.exceptions.UpdateFinishedTrialError):
        set_user_attrs(trial, {"status": "ok", "throughput": 5.0})
    (stored,) = study.get_trials()
    assert stored.state == TrialState.FAIL
    assert stored.user_attrs == {"status": "running-here"}


def test_outcome_attrs_are_stored_with_the_state_in_one_transaction(tmp_path):
    study = _study(tmp_path)
    backend = study._storage._backend
    statements: list[str] = []
    writes: list[list[str]] = []  # the tables each writing transaction of the tell wrote

    def executed(conn, cursor, statement, *rest) -> None:
        statements.append(statement)

    def committed(conn) -> None:
        words = [s.split() for s in statements]
        tables = [w[2] if w[0] == "INSERT" else w[1] for w in words if w[0] in ("INSERT", "UPDATE")]
        if tables:
            writes.append(tables)
        statements.clear()

    seen = {}

    def objective(trial: optuna.Trial) -> float:
        set_outcome_attrs(trial, {"status": "ok", "throughput": 5.0})
        seen.update(trial.user_attrs)  # the trial's own view sees them at once
        seen["stored before the state"] = study._storage.get_trial(trial._trial_id).user_attrs
        sqlalchemy.event.listen(backend.engine, "before_cursor_execute", executed)
        sqlalchemy.event.listen(backend.engine, "commit", committed)
        return 1.0

    study.optimize(objective, n_trials=1)
    sqlalchemy.event.remove(backend.engine, "before_cursor_execute", executed)
    sqlalchemy.event.remove(backend.engine, "commit", committed)
    assert seen == {"status": "ok", "throughput": 5.0, "stored before the state": {}}
    (stored,) = study.get_trials()
    assert stored.state == TrialState.COMPLETE
    assert stored.user_attrs == {"status": "ok", "throughput": 5.0}
    assert backend._with_state == {}
    # The tell wrote once: the attributes, the values and the state in one transaction.
    (tell,) = writes
    assert {"trial_user_attributes", "trial_values", "trials"} <= set(tell), tell


def test_a_finished_trial_takes_neither_its_outcome_attrs_nor_a_state(tmp_path):
    study = _study(tmp_path)
    trial = study.ask()
    backend = study._storage._backend
    study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)  # a stale worker's
    set_outcome_attrs(trial, {"status": "ok", "throughput": 5.0})
    with pytest.raises(optuna.exceptions.UpdateFinishedTrialError):
        backend.set_trial_state_values(trial._trial_id, TrialState.COMPLETE, [1.0])
    (stored,) = study.get_trials()
    assert stored.state == TrialState.FAIL and stored.user_attrs == {}
    assert backend._with_state == {}  # dropped with the refused write, not kept for later


def test_outcome_attrs_without_a_batch_storage_are_written_at_once(tmp_path):
    study = optuna.create_study(directions=["minimize"])  # in memory: no batch writer
    trial = study.ask()
    set_outcome_attrs(trial, {"status": "ok"})
    assert study._storage.get_trial(trial._trial_id).user_attrs == {"status": "ok"}


def test_system_attrs_are_written_in_one_transaction(tmp_path):
    study = _study(tmp_path)
    trial = study.ask()
    backend = study._storage._backend
    backend.set_trial_system_attrs(trial._trial_id, {"grid_id": 3, "search_space": {"a": [1]}})
    stored = study._storage.get_trial(trial._trial_id)
    assert stored.system_attrs["grid_id"] == 3
    assert stored.system_attrs["search_space"] == {"a": [1]}


def test_an_outcome_json_cannot_hold_fails_the_trial_not_its_state_change(tmp_path):
    import numpy as np

    study = _study(tmp_path)

    def objective(trial: optuna.Trial) -> float:
        set_outcome_attrs(trial, {"throughput": np.float32(1.5)})  # not JSON: refused here
        return 1.0

    with pytest.raises(TypeError):
        study.optimize(objective, n_trials=1)
    (stored,) = study.get_trials()
    assert stored.state == TrialState.FAIL  # Optuna failed it; it is not left RUNNING
    assert study._storage._backend._with_state == {}
