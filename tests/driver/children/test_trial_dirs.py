"""Trial folders left by dead workers are removed by the next run; a live worker's are kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tuner.core.protocol import TRIAL_DIR_PREFIX
from tuner.driver.children import _trial_dirs as trial_dirs
from tuner.driver.children._trial_dirs import Owner, is_abandoned

DAY = trial_dirs.UNOWNED_MAX_AGE_S
NS = "pid:[1]"


@pytest.mark.parametrize(
    ("recorded", "running", "age_s", "abandoned"),
    [
        (Owner(5, 100, NS), Owner(5, 100, NS), 3 * DAY, False),  # the owner runs
        (Owner(5, 100, NS), None, 1.0, True),  # no process at its pid
        (Owner(5, 100, NS), Owner(5, 200, NS), 1.0, True),  # the pid was reused
        (Owner(5, None, NS), Owner(5, 200, NS), 1.0, False),  # cannot tell: keep
        (None, None, 60.0, False),  # no record yet: perhaps a worker starting
        (None, None, 2 * DAY, True),  # no record for days
        (Owner(5, 100, "pid:[2]"), None, 60.0, False),  # another container's worker
        (Owner(5, 100, "pid:[2]"), None, 30 * DAY, False),  # never judged from here
    ],
)
def test_an_owner_is_dead_when_its_pid_is_gone_or_reused(
    recorded: Owner | None, running: Owner | None, age_s: float, abandoned: bool
) -> None:
    assert is_abandoned(recorded, running, age_s, NS) is abandoned


def dead_process() -> Owner:
    """A process that really ran and ended (pid and start time as they were)."""
    proc = subprocess.Popen(["sleep", "30"])
    owner = trial_dirs.process(proc.pid)
    proc.kill()
    proc.wait()
    assert owner is not None and owner.started is not None
    return owner


def trial_folder(root: Path, name: str, owner: Owner | None, age_s: float = 0.0) -> Path:
    folder = root / f"{TRIAL_DIR_PREFIX}{name}"
    folder.mkdir()
    (folder / "request.json").write_text("{}")
    if owner is not None:
        record = {"pid": owner.pid, "started": owner.started, "namespace": owner.namespace}
        (folder / trial_dirs.OWNER_FILE).write_text(json.dumps(record))
    stamp = time.time() - age_s
    os.utime(folder, (stamp, stamp))
    return folder


def test_the_sweep_removes_dead_owners_folders_and_keeps_live_ones(tmp_path: Path) -> None:
    me = trial_dirs.this_process()
    assert me.started is not None
    dead = trial_folder(tmp_path, "dead", dead_process())
    reused = trial_folder(tmp_path, "reused", Owner(me.pid, me.started - 1, me.namespace))
    live = trial_folder(tmp_path, "live", me)
    young = trial_folder(tmp_path, "young", None, age_s=60)
    old = trial_folder(tmp_path, "old", None, age_s=2 * DAY)
    other = tmp_path / "not-a-trial"
    other.mkdir()

    removed = trial_dirs.sweep(tmp_path)

    assert sorted(removed) == sorted([dead, reused, old])
    assert [p.exists() for p in (dead, reused, old)] == [False] * 3
    assert [p.exists() for p in (live, young, other)] == [True] * 3


def test_a_trial_folder_records_this_process_as_its_owner(tmp_path: Path) -> None:
    folder = tmp_path / f"{TRIAL_DIR_PREFIX}mine"
    folder.mkdir()
    trial_dirs.write_owner(folder)
    assert trial_dirs.read_owner(folder) == trial_dirs.this_process()
    assert trial_dirs.sweep(tmp_path) == [] and folder.exists()


def test_trial_children_do_not_inherit_the_storage_url(monkeypatch):
    from tuner.driver.children import _process as process

    monkeypatch.setenv("TUNER_STORAGE", "postgresql://u:secret@h/db")
    monkeypatch.setenv("TUNER_STORAGE_FILE", "/run/secrets/tuner_storage")
    env = process.child_environment({"EXTRA": "1"})
    assert "TUNER_STORAGE" not in env and "TUNER_STORAGE_FILE" not in env
    assert env["EXTRA"] == "1"


def test_a_killed_commands_own_folder_is_swept_by_the_next_run(tmp_path: Path) -> None:
    """``tuner validate``'s and lr-find's temp folders (weights, shipped functions) are owned
    like trial folders: removed at the end of the block, and swept once their process was killed
    before it could remove them (SIGKILL, or SIGTERM where no handler runs)."""
    code = (
        "import sys, time; from tuner.driver.children import owned_folder\n"
        "with owned_folder('validate') as folder:\n"
        "    print(folder, flush=True); time.sleep(60)\n"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None
    folder = Path(proc.stdout.readline().strip())
    assert folder.parent == tmp_path and folder.name.startswith(f"{TRIAL_DIR_PREFIX}validate-")
    assert trial_dirs.sweep(tmp_path) == []  # its owner runs
    proc.kill()
    proc.wait()
    assert folder.exists() and trial_dirs.sweep(tmp_path) == [folder] and not folder.exists()
    with trial_dirs.owned_folder("accumulation") as mine:
        assert trial_dirs.read_owner(mine) == trial_dirs.this_process()
    assert not mine.exists()
