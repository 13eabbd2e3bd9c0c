"""Optuna's private API, pinned (:mod:`tuner.storage._optuna_rdb`): the installed Optuna is within
the tested range and takes the one-transaction path; an Optuna outside the range, or one whose
private names moved, gets plain ``RDBStorage``, said at debug level, and a search-like sequence of
writes stores there exactly what it stores on the fast path. The range is the one the docs state,
and no other module of tuner names Optuna's internals. Real SQLite files."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import optuna
import pytest
import sqlalchemy
from optuna.storages._rdb import models
from optuna.storages._rdb import storage as rdb_storage
from optuna.trial import TrialState

import tuner.storage.trial_attrs
from tuner.driver.trial.grid import BatchAscendingGridSampler
from tuner.storage import _optuna_rdb, open_storage
from tuner.storage._optuna_rdb import TESTED_OPTUNA, find_fast_path, in_tested_range
from tuner.storage.trial_attrs import (
    TunerRDBStorage,
    batch_writer,
    fast_path_unavailable,
    rdb_storage_class,
    set_outcome_attrs,
    set_user_attrs,
)

ROOT = Path(__file__).resolve().parents[2]
CONFIG = {"devices": ["/cpu:0", "/cpu:1"], "epochs": 2, "seed": 7}
SPACE = {"global_batch_size": [64, 128, 256], "lr_rule": ["linear", "sqrt"]}


def _storage(tmp_path: Path, name: str) -> Any:
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    return open_storage(f"sqlite:///{tmp_path}/{name}.db", create=True)


def test_the_installed_optuna_is_tested_and_writes_a_trials_attributes_in_one_commit(tmp_path):
    assert in_tested_range(optuna.__version__), (optuna.__version__, TESTED_OPTUNA)
    assert fast_path_unavailable() is None
    assert rdb_storage_class() is TunerRDBStorage
    study = optuna.create_study(storage=_storage(tmp_path, "fast"), directions=["minimize"])
    backend = study._storage._backend
    assert type(backend) is TunerRDBStorage
    commits: list[str] = []
    trial = study.ask()
    assert batch_writer(trial) is backend
    sqlalchemy.event.listen(backend.engine, "commit", lambda conn: commits.append("commit"))
    set_user_attrs(trial, {**CONFIG, "global_batch_size": 128, "lr_rule": "linear"})
    assert commits == ["commit"]  # one plain RDBStorage would commit five times
    assert len(study._storage.get_trial(trial._trial_id).user_attrs) == 5


@pytest.mark.parametrize(
    ("version", "inside"),
    [
        ("4.5.0", True),
        ("4.10.2", True),  # by number, not by text ("4.10" < "4.5")
        ("5.0.0", True),
        ("5.0.3rc1", True),
        ("4.4.2", False),
        ("5.1.0", True),
        ("5.2.0", False),
        ("5.2.0.dev0", False),
        ("6.0.0", False),
        ("3.6.2", False),
        ("unknown", False),
    ],
)
def test_the_tested_range_reads_versions_by_major_and_minor(version, inside):
    assert in_tested_range(version) is inside
    assert (find_fast_path(version).unavailable is None) is inside


def _without_session_helper(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delattr(rdb_storage, "_create_scoped_session")
    return "moved its RDB internals"


def _without_attr_writer(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delattr(optuna.storages.RDBStorage, "_set_trial_attr_without_commit")
    return "has no RDBStorage._set_trial_attr_without_commit"


def _without_model(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delattr(models, "TrialUserAttributeModel")
    return "has no models.TrialUserAttributeModel"


def _newer_optuna(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(optuna, "__version__", "5.2.0")
    return f"Optuna 5.2.0 is outside the tested range {TESTED_OPTUNA}"


@pytest.mark.parametrize(
    "take_away", [_without_session_helper, _without_attr_writer, _without_model, _newer_optuna]
)
def test_without_its_internals_the_fast_path_is_off_and_says_why(monkeypatch, take_away):
    assert find_fast_path(optuna.__version__).unavailable is None
    expected = take_away(monkeypatch)
    verdict = find_fast_path(optuna.__version__)
    assert verdict.internals is None
    assert expected in (verdict.unavailable or "")


def _search(storage: Any) -> list[tuple]:
    """What tuner's study loop writes, in its order: a grid trial's two system attributes (the
    sampler), its configuration when it starts, its outcome with its end (one pruned, as an
    out-of-memory is); a retried write of a key; then what the study holds."""
    study = optuna.create_study(
        storage=storage, sampler=BatchAscendingGridSampler(SPACE), directions=["maximize"]
    )

    def objective(trial: optuna.Trial) -> float:
        batch = trial.suggest_categorical("global_batch_size", SPACE["global_batch_size"])
        rule = trial.suggest_categorical("lr_rule", SPACE["lr_rule"])
        set_user_attrs(trial, {**CONFIG, "status": "running"})
        set_user_attrs(trial, {"status": "measuring", "lr": 0.01 * batch / 64})
        if batch == 256 and rule == "sqrt":
            set_outcome_attrs(trial, {"status": "oom", "oom_phase": "train"})
            raise optuna.TrialPruned()
        set_outcome_attrs(trial, {"status": "ok", "throughput": float(batch)})
        set_outcome_attrs(trial, {"median_step_ms": 2.5})  # a later call adds to them
        return float(batch)

    study.optimize(objective, n_trials=len(SPACE["global_batch_size"]) * len(SPACE["lr_rule"]))
    return [
        (t.number, t.state, t.params, t.values, t.user_attrs, t.system_attrs)
        for t in study.get_trials()
    ]


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def storage_log() -> Iterator[list[logging.LogRecord]]:
    """Every record of tuner's storage logger, DEBUG and up, during the test."""
    handler = _Records()
    log = logging.getLogger(tuner.storage.trial_attrs.__name__)
    level = log.level
    log.setLevel(logging.DEBUG)
    log.addHandler(handler)
    yield handler.records
    log.removeHandler(handler)
    log.setLevel(level)


def test_outside_the_range_plain_rdbstorage_stores_the_same_search(
    tmp_path, monkeypatch, storage_log
):
    fast = _storage(tmp_path, "fast")
    assert type(fast) is TunerRDBStorage
    expected = _search(fast)
    assert storage_log == []

    # This process's Optuna as one outside the tested range.
    monkeypatch.setattr(_optuna_rdb, "FAST_PATH", find_fast_path("5.2.0"))
    plain = _storage(tmp_path, "plain")
    assert type(plain) is optuna.storages.RDBStorage  # Optuna's own
    assert [(r.levelno, r.getMessage()) for r in storage_log] == [
        (
            logging.DEBUG,
            "plain RDBStorage, a transaction per trial attribute: "
            f"Optuna 5.2.0 is outside the tested range {TESTED_OPTUNA}",
        )
    ]
    stored = _search(plain)
    assert stored == expected
    states = [state for _, state, *_ in stored]
    assert states.count(TrialState.PRUNED) == 1 and states.count(TrialState.COMPLETE) == 5
    with pytest.raises(RuntimeError, match="outside the tested range"):
        TunerRDBStorage(f"sqlite:///{tmp_path}/refused.db")


def test_the_range_is_stated_in_the_docs_and_only_one_module_names_the_internals():
    stated = f"`{TESTED_OPTUNA}`"
    assert stated in (ROOT / "docs" / "development.md").read_text()
    assert f"``{TESTED_OPTUNA}``" in (tuner.storage.trial_attrs.__doc__ or "")
    naming = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "tuner").rglob("*.py")
        if "optuna.storages._rdb" in path.read_text()
    )
    assert naming == ["tuner/storage/_optuna_rdb.py"]
