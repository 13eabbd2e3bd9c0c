"""Reliability with real processes, real TensorFlow and real storage: concurrent workers on a
journal file, a killed worker, Ctrl-C and SIGTERM. Faults inside trials, workers killed at random
moments, and concurrent workers on SQLite and PostgreSQL: tests/e2e/test_soak.py."""

from __future__ import annotations

import signal
import time

import pytest
from conftest import run_tuner, write_spec
from optuna.trial import TrialState
from procs import (
    assert_grid_settled,
    load,
    start_search,
    wait_children,
    wait_gone,
    wait_running,
)

from tuner.core.configurations import status_of

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("storage", ["sqlite", "journal"])
def test_three_workers_share_one_study(tmp_path, storage):
    # PostgreSQL: tests/e2e/test_postgres.py and the soak. SQLite at its default lock timeout:
    # the workers' own writes never lock each other out (the soak's URL gives 2 s, for its
    # outages).
    write_spec(tmp_path / "small.toml", base=256, multipliers="[1, 2]", rules='["none", "sqrt"]')
    url = "sqlite:///shared.db" if storage == "sqlite" else "journal:shared.log"
    started = time.monotonic()
    workers = [
        start_search(["--spec", "small.toml", "--cpu-replicas", "2", "--storage", url], tmp_path)
        for _ in range(3)
    ]
    outputs = [w.communicate(timeout=900) for w in workers]
    wall = time.monotonic() - started
    for worker, (_stdout, stderr) in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, stderr
        assert "database is locked" not in stderr
    where = f"{tmp_path}/shared"
    study = load(f"sqlite:///{where}.db" if storage == "sqlite" else f"journal:{where}.log")
    points = {(b, r) for b in (256, 512) for r in ("none", "sqrt")}
    assert_grid_settled(study, points)
    trials = study.get_trials()
    duplicates = len(trials) - len(points)
    assert duplicates <= 2, f"{duplicates} duplicated grid points"
    print(f"{storage}: 3 workers, {len(trials)} trials, {duplicates} duplicates, {wall:.0f} s")

    shown = run_tuner("show", "--storage", url, "--study-name", "small", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert sum(" ok " in line for line in shown.stdout.splitlines()) == 4
    exported = run_tuner("export", "--storage", url, "--study-name", "small", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr


def test_a_killed_worker_is_recovered_and_leaves_no_orphan(tmp_path):
    write_spec(tmp_path / "small.toml", base=256, multipliers="[1]", rules='["none"]', heartbeat=1)
    url = f"sqlite:///{tmp_path}/k.db"
    args = ["--spec", "small.toml", "--cpu-replicas", "2", "--storage", url]
    worker = start_search(args, tmp_path, TUNER_TEST_FAULT="hang@256")
    wait_running(url, 256)
    children = wait_children(worker.pid)
    worker.send_signal(signal.SIGKILL)
    worker.wait()
    assert wait_gone(children, 5), "the killed worker's child survived as an orphan"
    (stale,) = load(url).get_trials(states=(TrialState.RUNNING,))

    time.sleep(3.5)  # the grace period: 3 heartbeats
    again = run_tuner(*["search", *args], cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    study = load(url)
    assert_grid_settled(study, {(256, "none")})
    assert study.trials[stale.number].state == TrialState.FAIL
    retry = [t for t in study.trials if t.system_attrs.get("failed_trial") == stale.number]
    assert len(retry) == 1 and retry[0].state == TrialState.COMPLETE


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_stops_the_child_marks_the_trial_and_resumes(tmp_path, sig, code):
    write_spec(tmp_path / "small.toml", base=256, multipliers="[1, 2]", rules='["none"]')
    url = f"sqlite:///{tmp_path}/i.db"
    args = ["--spec", "small.toml", "--cpu-replicas", "2", "--storage", url]
    worker = start_search(args, tmp_path, TUNER_TEST_FAULT="hang@512")
    wait_running(url, 512)
    children = wait_children(worker.pid)
    sent = time.monotonic()
    worker.send_signal(sig)
    stdout, stderr = worker.communicate(timeout=30)
    assert time.monotonic() - sent < 10
    assert worker.returncode == code, stderr
    assert wait_gone(children, 2)
    assert "Traceback" not in stderr
    assert "(stopped)" in stdout and " ok " in stdout  # the summary of what finished
    study = load(url)
    (stopped,) = [t for t in study.trials if t.state == TrialState.FAIL]
    assert status_of(stopped) == "interrupted" and stopped.params["global_batch_size"] == 512
    if sig != signal.SIGINT:
        return  # the resume does not depend on the signal that stopped the search

    again = run_tuner(*["search", *args], cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    study = load(url)
    assert_grid_settled(study, {(256, "none"), (512, "none")})
    assert len(study.trials) == 3  # the interrupted point ran once more, nothing else did
