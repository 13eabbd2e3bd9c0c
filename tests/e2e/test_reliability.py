"""Reliability with real processes, real TensorFlow and real storage: concurrent workers, a killed
worker, Ctrl-C and SIGTERM, faults inside trials, and kills of the driver at random moments."""

from __future__ import annotations

import os
import random
import signal
import time

import pytest
from conftest import run_tuner, tuner_env, write_spec
from optuna.trial import TrialState
from procs import (
    assert_grid_settled,
    child_pids,
    finished_trials,
    load,
    start_search,
    wait_children,
    wait_gone,
    wait_new_result,
    wait_running,
)

from tuner.core.configurations import status_of

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("storage", ["sqlite", "journal"])
def test_four_concurrent_workers_share_one_study(tmp_path, storage):
    write_spec(tmp_path / "small.toml", base=256, multipliers="[1, 2, 4]", rules='["none", "sqrt"]')
    url = "sqlite:///shared.db" if storage == "sqlite" else "journal:shared.log"
    started = time.monotonic()
    workers = [
        start_search(["--spec", "small.toml", "--cpu-replicas", "2", "--storage", url], tmp_path)
        for _ in range(4)
    ]
    outputs = [w.communicate(timeout=900) for w in workers]
    wall = time.monotonic() - started
    for worker, (_stdout, stderr) in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, stderr
        assert "database is locked" not in stderr
    abs_url = url.replace("sqlite:///", f"sqlite:///{tmp_path}/").replace(
        "journal:", f"journal:{tmp_path}/"
    )
    study = load(abs_url)
    points = {(b, r) for b in (256, 512, 1024) for r in ("none", "sqrt")}
    assert_grid_settled(study, points)
    trials = study.get_trials()
    duplicates = len(trials) - len(points)
    assert duplicates <= 3, f"{duplicates} duplicated grid points"
    print(f"{storage}: 4 workers, {len(trials)} trials, {duplicates} duplicates, {wall:.0f} s")

    shown = run_tuner("show", "--storage", url, "--study-name", "small", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert sum(" ok " in line for line in shown.stdout.splitlines()) == 6
    exported = run_tuner("export", "--storage", url, "--study-name", "small", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr


def test_a_killed_worker_is_recovered_and_leaves_no_orphan(tmp_path):
    write_spec(tmp_path / "small.toml", base=256, multipliers="[1, 2]", rules='["none"]')
    url = f"sqlite:///{tmp_path}/k.db"
    args = ["--spec", "small.toml", "--cpu-replicas", "2", "--storage", url, "--heartbeat", "1"]
    worker = start_search(args, tmp_path, TUNER_TEST_FAULT="hang@512")
    wait_running(url, 512)
    children = wait_children(worker.pid)
    worker.send_signal(signal.SIGKILL)
    worker.wait()
    assert wait_gone(children, 5), "the killed worker's child survived as an orphan"
    (stale,) = load(url).get_trials(states=(TrialState.RUNNING,))

    time.sleep(3.5)  # the grace period: 3 heartbeats
    again = run_tuner(*["search", *args], cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    study = load(url)
    assert_grid_settled(study, {(256, "none"), (512, "none")})
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


def test_faults_inside_trials_are_classified_and_the_study_goes_on(tmp_path):
    # A hang past --trial-timeout is classified too: tests/e2e/test_orphans.py and the soaks,
    # which wait out a timeout anyway.
    write_spec(
        tmp_path / "small.toml", base=256, multipliers="[1, 2, 3, 4, 5, 6]", rules='["none"]'
    )
    faults = "segfault@256,abort@512,exit@768,garbage@1024,raise@1280"
    result = run_tuner(
        "search",
        "--spec",
        "small.toml",
        "--cpu-replicas",
        "2",
        "--storage",
        "sqlite:///f.db",
        cwd=tmp_path,
        env=tuner_env(TUNER_TEST_FAULT=faults),
    )
    assert result.returncode == 0, result.stderr
    study = load(f"sqlite:///{tmp_path}/f.db")
    by_batch = {t.params["global_batch_size"]: t for t in study.trials}
    expected = {
        256: ("crashed", "SIGSEGV"),
        512: ("crashed", "SIGABRT"),
        768: ("error", "without a result"),
        1024: ("error", "not JSON"),
        1280: ("error", "fault injected"),
    }
    for batch, (status, fragment) in expected.items():
        trial = by_batch[batch]
        assert trial.state == TrialState.FAIL
        assert status_of(trial) == status, (batch, trial.user_attrs)
        assert fragment in trial.user_attrs["error"]
    assert by_batch[1536].state == TrialState.COMPLETE  # the study went on after every fault


def test_killing_the_driver_at_random_moments_never_loses_results(tmp_path):
    """Each round lets one more trial finish, then kills the driver a random moment later (in
    the next trial's start, its training or its write), so every kill has results to lose."""
    write_spec(tmp_path / "small.toml", base=256, multipliers="[1, 2]", rules='["none", "sqrt"]')
    url = f"sqlite:///{tmp_path}/r.db"
    args = ["--spec", "small.toml", "--cpu-replicas", "2", "--storage", url, "--heartbeat", "1"]
    rng = random.Random(4)
    finished: dict[int, tuple[str, object]] = {}
    for _ in range(3):
        worker = start_search(args, tmp_path)
        if not wait_new_result(url, finished, worker):
            break  # this worker finished the grid: nothing left to kill
        time.sleep(rng.uniform(0.0, 6.0))
        children = child_pids(worker.pid)
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
        assert wait_gone(children, 5)
        now = finished_trials(url)
        for number, before in finished.items():
            assert now[number] == before, "a finished trial changed or vanished"
        finished = now
        time.sleep(3.5)  # let the dead worker's heartbeat go stale
    assert finished, "no trial finished before a kill: nothing was checked"
    final = run_tuner(*["search", *args], cwd=tmp_path)
    assert final.returncode == 0, final.stderr
    study = load(url)
    assert_grid_settled(study, {(b, r) for b in (256, 512) for r in ("none", "sqrt")})
    for number, before in finished.items():
        assert (study.trials[number].state.name, study.trials[number].values) == before
