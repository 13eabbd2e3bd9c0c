"""The guard on a real SQLite file: a fault after opening is one line (StorageFaultError) at
tuner's storage calls, the heartbeat never raises, every statement a search runs is one of
tuner's guarded calls, and a spooled result is recorded by the next search, once."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import optuna
import pytest
import sqlalchemy
from optuna.trial import TrialState

from tuner.core.record import decode
from tuner.driver.observer import QuietObserver
from tuner.driver.trial.loop import _run_one
from tuner.driver.trial.spooled import record_spooled, spool_outcome, spooled_line, storage_faults
from tuner.storage import StorageFaultError, open_storage, spool
from tuner.storage.faults import classify
from tuner.storage.guarded import attach, guard_of, storage_call
from tuner.storage.places import locate


@pytest.fixture(autouse=True)
def _spool_here(tmp_path, monkeypatch):
    monkeypatch.setenv("TUNER_SPOOL_DIR", str(tmp_path / "spool"))


def _study(url: str) -> optuna.Study:
    storage = open_storage(url, create=True, heartbeat_s=1, wait_s=2)
    study = optuna.create_study(study_name="s", storage=storage, directions=["minimize"] * 2)
    attach(study, storage)  # as tuner's opening does
    return study


def test_a_deleted_file_is_one_line_and_the_heartbeat_says_it_once(tmp_path):
    url = f"sqlite:///{tmp_path}/g.db"
    study = _study(url)
    trial = storage_call(study, study.ask)
    guard = guard_of(study)
    said: list[str] = []
    guard.notify = said.append
    (tmp_path / "g.db").unlink()
    for _ in range(3):
        guard.beat(trial._trial_id)  # never raises
    assert len(said) == 1 and "was deleted" in said[0]
    with pytest.raises(StorageFaultError, match=r"g\.db was deleted while the search ran"):
        storage_call(study, study.tell, trial, [1.0, 2.0])
    assert not (tmp_path / "g.db").exists()  # no empty database made in its place


def test_a_replaced_file_is_named(tmp_path):
    url = f"sqlite:///{tmp_path}/g.db"
    study = _study(url)
    shutil.copy(tmp_path / "g.db", tmp_path / "copy.db")
    os.replace(tmp_path / "copy.db", tmp_path / "g.db")
    with pytest.raises(StorageFaultError, match="replaced by another file"):
        storage_call(study, study.ask)


def test_a_fault_at_the_trials_tell_is_the_fault(tmp_path):
    """The trial loop tells the trial itself: the storage's fault at the tell is the search's
    one line, with the spooled result named (Optuna's own loop hid it behind "Should not
    reach")."""
    url = f"sqlite:///{tmp_path}/g.db"
    study = _study(url)

    def objective(trial: optuna.Trial, stored: object = None) -> tuple[float, float]:
        spool_outcome(trial, "COMPLETE", (1.0, 2.0), {"status": "ok"})
        (tmp_path / "g.db").unlink()
        return 1.0, 2.0

    with (
        pytest.raises(StorageFaultError, match="was deleted") as raised,
        storage_faults(study, QuietObserver()),
    ):
        _run_one(study, objective, QuietObserver())  # type: ignore[arg-type]
    assert "internal" not in str(raised.value) and "(#0) are spooled in" in str(raised.value)


def test_an_unreachable_server_is_an_outage():
    engine = sqlalchemy.create_engine("postgresql+psycopg://u:secret@127.0.0.1:9/db")
    with pytest.raises(sqlalchemy.exc.OperationalError) as raised:
        engine.connect()
    fault = classify(raised.value, locate("postgresql+psycopg://u:secret@127.0.0.1:9/db"))
    assert fault.outage and "cannot be reached" in fault.reason and "secret" not in fault.reason


def _full_tmpfs(tmp_path: Path) -> Path:
    folder = tmp_path / "small"
    folder.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)])
    if mounted.returncode != 0:
        pytest.skip("mount -t tmpfs is not allowed here")
    return folder


def test_a_full_disk_is_said_with_the_free_space(tmp_path):
    folder = _full_tmpfs(tmp_path)
    try:
        study = _study(f"sqlite:///{folder}/g.db")
        trial = storage_call(study, study.ask)
        with open(folder / "filler", "wb") as filler:  # the rest of the disk
            try:
                while True:
                    filler.write(b"\0" * 65536)
                    filler.flush()
            except OSError:
                pass
        with pytest.raises(
            StorageFaultError, match=rf"the disk is full \(\d+ \w+ free in {folder}"
        ):
            for n in range(200):  # until SQLite needs a page it cannot get
                storage_call(study, trial.set_user_attr, f"k{n}", "x" * 4000)
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def test_a_spooled_result_is_recorded_once_by_the_next_search(tmp_path):
    url = f"sqlite:///{tmp_path}/g.db"
    study = _study(url)
    trial = study.ask()
    spool_outcome(trial, "COMPLETE", (0.5, 100.0), {"status": "ok", "final_loss": 0.5})
    assert "(#0) are spooled in" in (spooled_line(study) or "")

    # Stopped before the storage took it; the next search opens the study again.
    storage = open_storage(url, create=True, wait_s=2)
    again = optuna.load_study(study_name="s", storage=storage)
    attach(again, storage)
    said: list[str] = []
    assert record_spooled(again, said.append) == 1
    stored = again.trials[0]
    assert stored.state == TrialState.COMPLETE and stored.values == [0.5, 100.0]
    assert decode(stored).status == "ok" and "recorded now" in said[0]
    assert record_spooled(again, said.append) == 0 and spooled_line(again) is None


def test_a_spooled_result_fills_the_waiting_copy_of_a_stale_trial(tmp_path):
    url = f"sqlite:///{tmp_path}/g.db"
    study = _study(url)
    trial = study.ask({"x": optuna.distributions.CategoricalDistribution([1, 2])})
    trial.suggest_categorical("x", [1, 2])
    spool_outcome(trial, "COMPLETE", (0.5, 100.0), {"status": "ok"})
    # Another worker found the heartbeat stale: FAIL, and a waiting copy of the point.
    study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
    study.enqueue_trial(trial.params)
    copy = study.get_trials(states=(TrialState.WAITING,))[0]
    study._storage.set_trial_system_attr(copy._trial_id, "failed_trial", trial.number)
    assert record_spooled(study, lambda line: None) == 1
    states = [t.state for t in study.get_trials()]
    assert states == [TrialState.FAIL, TrialState.COMPLETE]
    assert study.trials[1].values == [0.5, 100.0]


def test_the_spool_writes_whole_files_only(tmp_path):
    folder = tmp_path / "spool" / uuid.uuid4().hex
    record = {"study": "s", "number": 3, "state": "COMPLETE", "values": [1.0, 2.0], "attrs": {}}
    spool.write(folder, 7, record)
    (folder / "trial-8.json").write_text("{half")  # never written by tuner: skipped
    assert [r["trial_id"] for r in spool.pending(folder, "s")] == [7]
    spool.discard(folder, 7)
    assert spool.pending(folder, "s") == []


def test_every_statement_a_search_runs_is_one_of_tuners_guarded_calls(tmp_path):
    """The search asks for and tells its trials itself, so every statement it runs on its
    storage once the study is open runs inside a call of the guard's retry, or is a heartbeat
    (its own guarded step): none is out of tuner's reach (under ``study.optimize``, Optuna's
    trial cache made private calls that a proxy had to list)."""
    import traceback

    from fake_child import PLAN, make_spec
    from sqlalchemy.engine import Engine

    from tuner.driver.children._instant import InstantRunner
    from tuner.driver.study import run_search

    outside: list[str] = []
    guards: list[object] = []

    def check(conn: object, cursor: object, statement: str, *rest: object) -> None:
        guard = guards[0] if guards else None
        inside = getattr(getattr(guard, "_local", None), "depth", 0)
        beat = any(f.name == "beat" for f in traceback.extract_stack())  # Guard.beat
        if guard is not None and not inside and not beat:
            outside.append(statement.split()[0])

    sqlalchemy.event.listen(Engine, "before_cursor_execute", check)
    try:
        report = run_search(
            make_spec((1, 2)),
            PLAN,
            f"sqlite:///{tmp_path / 's.db'}",
            runner=InstantRunner(),
            baseline=False,
            on_study=lambda study: guards.append(guard_of(study)),
        )
    finally:
        sqlalchemy.event.remove(Engine, "before_cursor_execute", check)
    assert guards and guards[0] is not None
    assert {t.state for t in report.study.get_trials()} == {TrialState.COMPLETE}
    assert outside == []


def test_the_trial_loop_writes_the_heartbeat_while_the_trial_runs(tmp_path):
    # tuner asks for its trials itself, so the heartbeat is its own step: written as the
    # trial starts, and its thread gone when the trial is told.
    import sqlite3
    import threading

    study = _study(f"sqlite:///{tmp_path}/g.db")
    beaten: list[bool] = []

    def objective(trial: optuna.Trial, stored: object = None) -> tuple[float, float]:
        # Optuna's own heartbeat table, read as any reader of the file would (no private name)
        with sqlite3.connect(tmp_path / "g.db") as db:
            rows = db.execute(
                "SELECT 1 FROM trial_heartbeats WHERE trial_id = ?", (trial._trial_id,)
            ).fetchall()
        beaten.append(bool(rows))
        return 1.0, 2.0

    _run_one(study, objective, QuietObserver())  # type: ignore[arg-type]
    assert beaten == [True]  # it had beaten before the objective ran
    assert not [t for t in threading.enumerate() if t.name.startswith("tuner-heartbeat-")]
    assert study.get_trials()[0].state == TrialState.COMPLETE


def test_a_first_beat_not_stored_stops_the_search_before_the_configuration(tmp_path):
    # The first beat is a write like any other: the configuration (which holds heartbeat_s, "this
    # trial has beaten") is never written without it, so a RUNNING trial without heartbeat_s is
    # one that never beat (the unborn check, tuner.driver.trial.resume).
    import sqlite3

    study = _study(f"sqlite:///{tmp_path}/g.db")
    guard = guard_of(study)
    guard.notify = lambda line: None

    def refused(trial_id: int) -> None:
        raise sqlalchemy.exc.OperationalError(
            "INSERT", {}, sqlite3.OperationalError("disk I/O error")
        )

    guard._record = lambda: refused
    ran: list[int] = []

    def objective(trial: optuna.Trial, stored: object = None) -> tuple[float, float]:
        ran.append(trial.number)
        return 1.0, 2.0

    with pytest.raises(StorageFaultError, match="disk I/O error"):
        _run_one(study, objective, QuietObserver())  # type: ignore[arg-type]
    assert ran == []
    (trial,) = optuna.load_study(study_name="s", storage=f"sqlite:///{tmp_path}/g.db").trials
    assert trial.state == TrialState.RUNNING
    assert decode(trial).configuration.heartbeat_s is None


def test_a_spool_file_of_another_shape_is_set_aside_with_one_warning(tmp_path, caplog):
    """Valid JSON that is no spooled result (issue 44, case 4) no longer ends every search and
    ``tuner show`` in an internal error: it is renamed ``*.not-a-result``, said once, and the
    real spooled result beside it is still recorded."""
    url = f"sqlite:///{tmp_path}/g.db"
    study = _study(url)
    trial = study.ask()
    spool_outcome(trial, "COMPLETE", (0.5, 100.0), {"status": "ok", "final_loss": 0.5})
    (good,) = list((tmp_path / "spool").rglob("trial-*.json"))
    strays = {"trial-98.json": "[1, 2]", "trial-99.json": '{"trial_id": "x", "study": "s"}'}
    for name, text in strays.items():
        (good.parent / name).write_text(text)
    with caplog.at_level("WARNING", logger="tuner.storage"):
        assert "(#0) are spooled in" in (spooled_line(study) or "")
    for name in strays:
        assert not (good.parent / name).exists()
        assert (good.parent / f"{name}.not-a-result").exists()  # kept for the user to read
        assert sum(name in r.getMessage() for r in caplog.records) == 1
    storage = open_storage(url, create=True, wait_s=2)
    again = optuna.load_study(study_name="s", storage=storage)
    attach(again, storage)
    assert record_spooled(again, lambda line: None) == 1
    assert again.trials[0].values == [0.5, 100.0]


def test_the_heartbeats_lines_name_options_as_the_search_does(tmp_path):
    """The heartbeat thread speaks in its search's context: an outage it meets names
    ``search.storage_wait`` (the spec key a search sets), not the reading commands' flag."""
    import sqlite3
    import time

    from tuner.core.options import naming
    from tuner.storage.guarded import beating

    url = f"sqlite:///{tmp_path}/g.db?timeout=0.2"
    study = _study(url)
    trial = storage_call(study, study.ask)
    said: list[str] = []
    guard_of(study).notify = said.append
    holder = sqlite3.connect(tmp_path / "g.db", isolation_level=None)
    with naming("search"), beating(study, trial._trial_id):
        holder.execute("BEGIN EXCLUSIVE")  # after the first beat: the thread's next one waits
        deadline = time.monotonic() + 30
        while not said and time.monotonic() < deadline:
            time.sleep(0.1)
        holder.execute("COMMIT")
    assert said and "(search.storage_wait)" in said[0], said
