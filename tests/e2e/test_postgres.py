"""One study on a real PostgreSQL server, shared by several ``tuner search`` workers, one of them
killed mid-trial (the heartbeat recovers its trial).

``.ci/run`` installs and starts the server and creates the role; ``TUNER_TEST_POSTGRES`` is an
URL of a database that role can connect to (each test gets a fresh database of its own).
"""

from __future__ import annotations

import signal
import socket
import time
from collections import Counter
from collections.abc import Iterator

import pytest
from conftest import run_tuner, write_spec
from optuna.trial import TrialState
from pg_databases import fresh_database
from procs import assert_grid_settled, load, start_search, wait_running

from tuner.core.record import decode

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh, empty database on the test server; dropped afterwards."""
    with fresh_database() as url:
        yield url


def test_workers_share_one_postgres_study_and_recover_a_killed_ones_trial(tmp_path, pg_url):
    """A worker killed mid-trial (SIGKILL), then two workers sharing the rest of the grid: its
    trial, stale once 3 of its heartbeats are missed, is failed and its point run again once."""
    grid = {"base": 256, "multipliers": "[1, 2, 4]", "rules": '["none", "sqrt"]'}
    write_spec(tmp_path / "killed.toml", **grid, heartbeat=1)
    write_spec(tmp_path / "small.toml", **grid, heartbeat=2)  # a heartbeat may change on resume
    args = ["--cpu-replicas", "2", "--storage", pg_url, "--no-baseline"]
    killed = start_search([*args, "--spec", "killed.toml"], tmp_path, TUNER_TEST_FAULT="hang@512")
    wait_running(pg_url, 512)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    (stale,) = load(pg_url).get_trials(states=(TrialState.RUNNING,))

    # Their grace period (3 heartbeats, 6 s) is over before their workload checks are: the
    # killed worker's trial is failed when they first claim one.
    args += ["--spec", "small.toml"]
    started = time.monotonic()
    workers = [start_search(args, tmp_path) for _ in range(2)]
    outputs = [w.communicate(timeout=900) for w in workers]
    wall = time.monotonic() - started
    for worker, (_stdout, stderr) in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, stderr
        assert "tuner:tuner@" not in stderr  # the password never shows

    study = load(pg_url)
    points = {(b, r) for b in (256, 512, 1024) for r in ("none", "sqrt")}
    assert_grid_settled(study, points)
    assert study.trials[stale.number].state == TrialState.FAIL
    retry = [t for t in study.trials if t.system_attrs.get("failed_trial") == stale.number]
    # Two workers that meet the stale trial at once may both queue it again (seen once, in a
    # full run at c6057a8): Optuna fails it atomically and its retry callback queues a copy, but
    # the other worker's requeue of failed trials (tuner.driver.trial.resume) can read it failed
    # before that copy is stored and queue one of its own. A race, counted with the duplicates
    # below. One worker runs it again exactly once:
    # tests/e2e/test_reliability.py::test_a_killed_worker_is_recovered_and_leaves_no_orphan.
    assert 1 <= len(retry) <= 2 and all(t.state == TrialState.COMPLETE for t in retry), retry
    trials = study.get_trials()
    host = socket.gethostname()
    assert {decode(t).configuration.host for t in trials} == {host}
    per_worker = Counter(decode(t).configuration.worker for t in trials)
    killed_one = decode(stale).configuration.worker
    assert len(per_worker) == 3, f"the grid was not shared out: {per_worker}"
    assert all(decode(t).configuration.device_model == "cpu" for t in trials)
    assert all(decode(t).configuration.device_count == 2 for t in trials)
    duplicates = len(trials) - len(points) - 1  # the killed worker's trial is not one
    assert duplicates <= 2, f"{duplicates} duplicated grid points"
    print(
        f"postgres: a killed worker ({per_worker[killed_one]} trials), then 2 workers, "
        f"{len(trials)} trials (per worker {sorted(per_worker.values())}), "
        f"{duplicates} duplicates, {wall:.0f} s"
    )

    shown = run_tuner("show", "--storage", pg_url, "--study-name", "small", "--all", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    rows = [line for line in shown.stdout.splitlines() if host in line]
    assert len(rows) == len(trials)
    exported = run_tuner("export", "--storage", pg_url, "--study-name", "small", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert '"per_device_signature"' in exported.stdout
    report = run_tuner(
        "report", "--storage", pg_url, "--study-name", "small", "-o", "r.html", cwd=tmp_path
    )
    assert report.returncode == 0, report.stderr

    # A host with other devices (here: another memory cap) is refused, and told what to do.
    other = run_tuner("search", *args, "--memory-limit", "512MiB", cwd=tmp_path)
    assert other.returncode == 2
    assert "give these devices their own --study-name" in other.stderr
    assert "small-2x-cpu-cap-512-mib-per-device" in other.stderr
    assert len(load(pg_url).get_trials()) == len(trials)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "postgresql+psycopg://tuner:wrong-secret@127.0.0.1:5432/postgres",
            "password authentication failed",
        ),
        ("postgresql+nosuchdriver://tuner:wrong-secret@127.0.0.1/postgres", "cannot open"),
    ],
    ids=["wrong-password", "unknown-driver"],
)
@pytest.mark.parametrize("command", ["search", "show", "dashboard"])
def test_bad_postgres_urls_are_one_clear_line_with_the_password_masked(
    tmp_path, url, expected, command
):
    args = [command, "--storage", url]
    if command == "search":
        write_spec(tmp_path / "small.toml", base=256, multipliers="[1]", rules='["none"]')
        args += ["--spec", "small.toml", "--cpu-replicas", "2"]
    result = run_tuner(*args, cwd=tmp_path, timeout=120)
    assert result.returncode == 2, result.stderr
    assert "wrong-secret" not in result.stderr + result.stdout
    assert "tuner:***@" in result.stderr
    assert "Traceback" not in result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert expected in line


def test_a_server_down_is_waited_for_then_one_line_with_the_password_masked(tmp_path):
    """A server out of reach is waited for (``[search] storage_wait``;
    tests/e2e/test_storage_outages.py starts it meanwhile); past the bound, exit 1."""
    write_spec(
        tmp_path / "small.toml", base=256, multipliers="[1]", rules='["none"]', storage_wait=1
    )
    url = "postgresql+psycopg://tuner:wrong-secret@127.0.0.1:1/postgres"
    args = ["--spec", "small.toml", "--cpu-replicas", "2"]
    result = run_tuner("search", "--storage", url, *args, cwd=tmp_path, timeout=120)
    assert result.returncode == 1, result.stderr
    assert "wrong-secret" not in result.stderr + result.stdout
    assert "Traceback" not in result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert "tuner:***@127.0.0.1:1/postgres cannot be opened: it cannot be reached" in line
    assert "still after waiting 1 s (search.storage_wait); start the database server" in line


def test_many_processes_creating_one_fresh_database_all_succeed(pg_url):
    """Workers that start together race to create the schema (PostgreSQL enum types and tables);
    every one of them must open the storage."""
    import subprocess
    import sys

    code = (
        "import sys; from tuner.storage import open_storage; "
        "open_storage(sys.argv[1], create=True, heartbeat_s=1); print('ok')"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, pg_url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0 and out.strip() == "ok", err
        assert "Warning" not in err
