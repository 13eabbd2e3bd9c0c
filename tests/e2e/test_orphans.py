"""Nothing of a trial outlives it, with real workers, real TensorFlow and a data function that
starts processes of its own (``tuner_test_workloads:orphaning_data``): one in the trial's session,
one in a new session and one daemonized. Neither a SIGKILLed worker nor a trial past its timeout
leaves a process or a trial folder behind; the next run removes the folders of dead workers."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import run_tuner, tuner_env
from procs import descendants, load, marker_pids, start_search, wait_gone, wait_until
from tuner_test_workloads import HOLD_ENV, MARKER_ENV, MARKER_LOG_ENV

from tuner.core.configurations import status_of
from tuner.core.protocol import TRIAL_DIR_PREFIX
from tuner.driver.children import _trial_dirs as trial_dirs

pytestmark = pytest.mark.slow

SPEC = """
[study]
name = "small"

[workload]
model = "tuner.workloads.regression:build_model"
data = "tuner_test_workloads:orphaning_data"
loss = "mse"
optimizer = "adam"

[search]
base_batch_size = 256
batch_multipliers = [1]
lr_rules = ["none"]
base_lr = 1e-3
epochs = 2
"""


@pytest.fixture
def marker() -> Iterator[str]:
    name = f"tuner-marker-{uuid.uuid4().hex[:12]}"
    yield name
    for pid in marker_pids(name):  # only after a failure: leave nothing behind
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def setup(tmp_path: Path, marker: str) -> tuple[list[str], dict[str, str], Path]:
    """The search's arguments, its environment (its own temp folder) and that temp folder."""
    (tmp_path / "orphans.toml").write_text(SPEC)
    temp = tmp_path / "tmp"
    temp.mkdir()
    args = ["--spec", "orphans.toml", "--cpu-replicas", "2", "--storage", "sqlite:///o.db"]
    args += ["--no-baseline"]
    env = {MARKER_ENV: marker, HOLD_ENV: "600", MARKER_LOG_ENV: str(tmp_path / "markers.log")}
    return args, {**env, "TMPDIR": str(temp)}, temp


def started(tmp_path: Path, mode: str) -> list[int]:
    """The pids the data function logged in ``mode`` (all runs of that mode)."""
    log = tmp_path / "markers.log"
    lines = log.read_text().splitlines() if log.exists() else []
    runs = [json.loads(line) for line in lines]
    return [pid for run in runs if run["mode"] == mode for pid in run["pids"]]


def trial_folders(temp: Path) -> list[Path]:
    return list(temp.glob(f"{TRIAL_DIR_PREFIX}*"))


def test_a_sigkilled_worker_leaves_no_process_and_no_trial_folder(tmp_path, marker):
    args, env, temp = setup(tmp_path, marker)
    # Two grid points: the first trial's run is not the search's last, so a spare is ordered for
    # the next run; it waits for the trial's timed windows, which the held trial never reaches.
    worker = start_search([*args, "--batch-multipliers", "1,2"], tmp_path, **env)

    def running() -> bool:
        return len(marker_pids(f"{marker}-trial")) == 3

    wait_until(lambda: running() or worker.poll() is not None, 300, poll_s=0.3)
    if not running():
        worker.kill()
        pytest.fail(f"no trial with its sleepers: {worker.communicate()[1][-3000:]}")
    # The workload check's child ended normally: what it started went with it.
    assert len(started(tmp_path, "inspect")) == 3 and marker_pids(f"{marker}-inspect") == []
    trial = [*descendants(worker.pid), *marker_pids(marker)]  # supervisor, child, the sleepers
    # The trial's folder only: no warm child yet.
    assert len(trial_folders(temp)) == 1

    worker.send_signal(signal.SIGKILL)
    worker.wait()
    killed = time.monotonic()
    assert wait_gone(trial, 10), "a process of the trial outlived its worker"
    assert marker_pids(marker) == []
    assert wait_until(lambda: not trial_folders(temp), 10 - (time.monotonic() - killed))


TIMEOUT_S = 25
"""``--trial-timeout`` of the timeout test. The trial takes the warm child started beside the
workload check (the timeout runs from the hand-over), so it reaches the held data function within
seconds; the bound must also cover the cold workload check, which it applies to as well (~5 s
quiet, ~10 s beside two busy processes): 25 s leaves a noisy CI machine room, where 45 s waited
20 s for nothing."""


def test_a_trial_past_its_timeout_leaves_nothing_behind(tmp_path, marker):
    args, env, temp = setup(tmp_path, marker)
    dead = plant(temp, "dead", dead_process())
    live = plant(temp, "live", trial_dirs.this_process())
    args += ["--trial-timeout", str(TIMEOUT_S)]
    result = run_tuner("search", *args, cwd=tmp_path, env=tuner_env(**env))
    assert "Traceback" not in result.stderr, result.stderr
    (trial,) = load(f"sqlite:///{tmp_path}/o.db").trials
    assert status_of(trial) == "timeout", trial.user_attrs
    assert len(started(tmp_path, "trial")) == 3  # the sleepers were there to be killed
    assert marker_pids(marker) == []
    assert trial_folders(temp) == [live]  # the dead worker's folder went, the live one's stayed
    assert not dead.exists()


def dead_process() -> trial_dirs.Owner:
    proc = subprocess.Popen(["sleep", "30"])
    owner = trial_dirs.process(proc.pid)
    proc.kill()
    proc.wait()
    assert owner is not None
    return owner


def plant(temp: Path, name: str, owner: trial_dirs.Owner) -> Path:
    folder = temp / f"{TRIAL_DIR_PREFIX}{name}"
    folder.mkdir()
    record = {"pid": owner.pid, "started": owner.started, "namespace": owner.namespace}
    (folder / trial_dirs.OWNER_FILE).write_text(json.dumps(record))
    return folder
