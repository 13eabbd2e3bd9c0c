"""Optuna's journal storage, guarded as an RDB storage is (issue 29): its file deleted or
replaced, a full disk (a real tmpfs) and a folder made read-only are one line
(StorageFaultError), never a journal started afresh; a measured result is spooled and recorded
by the next search. Real JournalStorage on real files."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from tuner.driver.trial.spooled import record_spooled, spool_outcome, spooled_line
from tuner.storage import StorageFaultError, open_storage
from tuner.storage.guarded import attach, guard_of, storage_call


@pytest.fixture(autouse=True)
def _spool_here(tmp_path, monkeypatch):
    monkeypatch.setenv("TUNER_SPOOL_DIR", str(tmp_path / "spool"))


def _study(url: str) -> optuna.Study:
    storage = open_storage(url, create=True, wait_s=2)
    assert guard_of(storage) is not None
    study = optuna.create_study(
        study_name="s", storage=storage, directions=["minimize"] * 2, load_if_exists=True
    )
    attach(study, storage)  # as tuner's opening does
    return study


def test_a_deleted_journal_is_one_line_and_not_started_afresh(tmp_path):
    study = _study(f"journal:{tmp_path}/j.log")
    (tmp_path / "j.log").unlink()
    with pytest.raises(StorageFaultError) as raised:
        storage_call(study, study.ask)
    line = str(raised.value)
    assert f"the journal file {tmp_path}/j.log was deleted while the search ran" in line
    assert "put the journal file back" in line
    assert not (tmp_path / "j.log").exists()  # Optuna would have started a new, empty one


def test_a_replaced_journal_is_named(tmp_path):
    study = _study(f"journal:{tmp_path}/j.log")
    shutil.copy(tmp_path / "j.log", tmp_path / "copy.log")
    os.replace(tmp_path / "copy.log", tmp_path / "j.log")
    with pytest.raises(StorageFaultError, match="replaced by another file"):
        storage_call(study, study.ask)


@contextlib.contextmanager
def _mounted(folder: Path, *commands: list[str]) -> Iterator[None]:
    if os.geteuid() != 0:
        pytest.skip("mounting needs root (CI runs as root)")
    for command in commands:
        if subprocess.run(command).returncode:
            pytest.skip(f"{' '.join(command[:3])} is not allowed here")
    try:
        yield
    finally:
        for _ in commands:
            subprocess.run(["umount", "-l", str(folder)], check=False)


def test_a_full_disk_under_a_journal_is_said(tmp_path):
    folder = tmp_path / "small"
    folder.mkdir()
    with _mounted(folder, ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)]):
        study = _study(f"journal:{folder}/j.log")
        trial = storage_call(study, study.ask)
        with open(folder / "filler", "wb", buffering=0) as filler, contextlib.suppress(OSError):
            while True:
                filler.write(b"\0" * 65536)
        with pytest.raises(StorageFaultError, match=rf"the disk is full \(.* free in {folder}\)"):
            for n in range(200):
                storage_call(study, trial.set_user_attr, f"k{n}", "x" * 4000)


def test_a_journal_folder_made_read_only_is_permission_lost(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    study = _study(f"journal:{folder}/j.log")
    trial = storage_call(study, study.ask)
    bind = ["mount", "--bind", str(folder), str(folder)]
    read_only = ["mount", "-o", "remount,bind,ro", str(folder)]
    with (
        _mounted(folder, bind, read_only),
        pytest.raises(StorageFaultError, match="permission to write it was lost"),
    ):
        storage_call(study, trial.set_user_attr, "k", "v")


def test_a_spooled_journal_result_is_recorded_by_the_next_search(tmp_path):
    url = f"journal:{tmp_path}/j.log"
    study = _study(url)
    trial = storage_call(study, study.ask)
    spool_outcome(trial, "COMPLETE", (0.5, 100.0), {"status": "ok"})
    assert "(#0) are spooled in" in (spooled_line(study) or "")
    again = _study(url)
    assert record_spooled(again, lambda line: None) == 1
    (stored,) = again.get_trials()
    assert stored.state == TrialState.COMPLETE and stored.values == [0.5, 100.0]
    assert spooled_line(again) is None
