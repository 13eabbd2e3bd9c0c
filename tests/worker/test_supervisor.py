"""The trial supervisor (``python -m tuner.worker.supervisor``) with plain commands, no trial child:
the child's exit passes through, and nothing the child started outlives it, even in a session of
its own — when the child ends, when the supervisor is told to stop and when its parent dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from procs import alive, child_pids, marker_pids, wait_gone, wait_until

from tuner.core import protocol
from tuner.driver.children import _process as process
from tuner.worker import supervisor

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")

SUPERVISOR = [sys.executable, "-S", "-m", protocol.SUPERVISOR_MODULE]


def env() -> dict[str, str]:
    root = str(Path(supervisor.__file__).resolve().parents[2])
    return {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}


def supervise(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SUPERVISOR, "--", *command], env=env(), capture_output=True, text=True, timeout=30
    )


def spawner(marker: str, then: str) -> list[str]:
    """A shell that starts a sleeper in its session, one in a new session, a daemonized one, then
    runs ``then``."""
    sleeper = f"exec -a {marker} sleep 3001"
    script = (
        f"bash -c '{sleeper}' & setsid bash -c '{sleeper}' & "
        f"(setsid bash -c '({sleeper}) &' ) & sleep 0.3; {then}"
    )
    return ["bash", "-c", script]


@pytest.fixture
def marker() -> Iterator[str]:
    name = f"tuner-marker-{uuid.uuid4().hex[:12]}"
    yield name
    for pid in marker_pids(name):  # only if a test failed: leave nothing behind
        os.kill(pid, signal.SIGKILL)


def test_the_childs_exit_code_and_output_pass_through() -> None:
    run = supervise(
        sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"
    )
    assert (run.returncode, run.stdout, run.stderr) == (3, "out\n", "err\n")


@pytest.mark.parametrize("sig", [signal.SIGSEGV, signal.SIGABRT, signal.SIGKILL])
def test_a_child_killed_by_a_signal_ends_the_supervisor_by_that_signal(sig: int) -> None:
    run = supervise(sys.executable, "-c", f"import os; os.kill(os.getpid(), {int(sig)})")
    assert run.returncode == -sig


def test_the_child_sees_the_supervisor_as_its_parent_and_no_blocked_signal() -> None:
    code = (
        "import os, signal; print(os.environ['TUNER_PARENT_PID'] == str(os.getppid()), "
        "signal.pthread_sigmask(signal.SIG_BLOCK, []))"
    )
    run = supervise(sys.executable, "-c", code)
    assert run.stdout == "True set()\n"


def test_nothing_the_child_started_outlives_its_end(marker: str) -> None:
    run = supervise(*spawner(marker, "exit 0"))
    assert run.returncode == 0
    assert marker_pids(marker) == []


def test_a_sigterm_kills_the_whole_tree_and_ends_the_supervisor_by_it(marker: str) -> None:
    proc = subprocess.Popen([*SUPERVISOR, "--", *spawner(marker, "sleep 3001")], env=env())
    assert wait_until(lambda: len(marker_pids(marker)) == 3, 10)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == -signal.SIGTERM
    assert marker_pids(marker) == []


def test_children_of_a_child_whose_main_thread_has_exited_are_killed_too(marker: str) -> None:
    """A multi-threaded child dying (TensorFlow on SIGTERM) can show as a zombie while its other
    threads, and its children, live on: the tree is walked through zombies too. Here the main
    thread exits for good (the other thread then waits for the GIL forever)."""
    code = (
        "import ctypes, subprocess, threading, time\n"
        f"subprocess.Popen(['bash', '-c', 'exec -a {marker} sleep 3001'], start_new_session=True)\n"
        "threading.Thread(target=time.sleep, args=(0.5,)).start()\n"
        "ctypes.CDLL(None).pthread_exit(None)\n"
    )
    proc = subprocess.Popen([*SUPERVISOR, "--", sys.executable, "-c", code], env=env())
    assert wait_until(lambda: len(marker_pids(marker)) == 1, 10)
    (child,) = child_pids(proc.pid)
    assert wait_until(lambda: _state(child) == "Z", 10)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == -signal.SIGTERM
    assert marker_pids(marker) == []


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_when_the_parent_dies_the_tree_and_the_trial_folder_go(tmp_path: Path, marker: str) -> None:
    folder = tmp_path / f"{protocol.TRIAL_DIR_PREFIX}x"
    folder.mkdir()
    (folder / "request.json").write_text("{}")
    start = [*SUPERVISOR, "--trial-dir", str(folder), "--", *spawner(marker, "sleep 3001")]
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import subprocess, time; subprocess.Popen({start!r}); time.sleep(60)",
        ],
        env=env(),
    )
    assert wait_until(lambda: len(marker_pids(marker)) == 3, 10)
    (sup,) = [p for p in child_pids(parent.pid) if alive(p)]
    parent.kill()
    parent.wait()
    assert wait_gone([sup, *marker_pids(marker)], 5)
    assert not folder.exists()


def test_the_death_of_the_thread_that_started_it_counts_as_the_parents(
    tmp_path: Path, marker: str
) -> None:
    """When a multi-threaded driver is killed, the thread that started the supervisor can exit
    first: the parent pid stays (a sibling thread adopts it) and only the parent-death signal
    tells. Here that thread exits on purpose while the process lives on."""
    folder = tmp_path / "trial"
    folder.mkdir()
    start = [*SUPERVISOR, "--trial-dir", str(folder), "--", *spawner(marker, "sleep 3001")]
    code = (
        "import subprocess, threading, time\n"
        f"threading.Thread(target=lambda: subprocess.Popen({start!r}) and time.sleep(1)).start()\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], env=env())
    try:
        assert wait_until(lambda: len(marker_pids(marker)) == 3, 10)
        assert wait_until(lambda: not folder.exists(), 10)
        assert wait_until(lambda: marker_pids(marker) == [], 5)
    finally:
        parent.kill()
        parent.wait()


def test_the_folder_stays_when_the_child_ends_normally(tmp_path: Path) -> None:
    folder = tmp_path / "trial"
    folder.mkdir()
    run = subprocess.run(
        [*SUPERVISOR, "--trial-dir", str(folder), "--", "true"], env=env(), timeout=30
    )
    assert run.returncode == 0 and folder.exists()


def test_the_supervisor_imports_nothing_heavy() -> None:
    code = (
        "import sys, tuner.worker.supervisor; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'tensorflow', 'optuna', 'numpy'}))"
    )
    run = subprocess.run(
        [sys.executable, "-S", "-c", code], env=env(), capture_output=True, text=True, timeout=30
    )
    assert run.stdout == "[]\n", run.stderr


def test_descendants_are_found_through_parent_links() -> None:
    parents = {10: 1, 11: 10, 12: 11, 13: 10, 20: 1, 21: 20}
    assert supervisor.descendants(parents, 10) == [11, 13, 12]
    assert supervisor.descendants(parents, 99) == []


def test_arguments() -> None:
    assert supervisor.parse_args(["--trial-dir", "/t", "--", "a", "b"]) == ("/t", ["a", "b"])
    assert supervisor.parse_args(["--", "a"]) == (None, ["a"])
    with pytest.raises(SystemExit):
        supervisor.parse_args(["--"])


def test_the_runner_starts_trial_children_under_the_supervisor(tmp_path: Path) -> None:
    command = process.child_command(tmp_path / "request.json", tmp_path / "result.json")
    assert command[: len(SUPERVISOR)] == SUPERVISOR
    assert command[len(SUPERVISOR) : len(SUPERVISOR) + 3] == ["--trial-dir", str(tmp_path), "--"]
    assert command[-4:] == [
        "-m",
        protocol.WORKER_MODULE,
        str(tmp_path / "request.json"),
        str(tmp_path / "result.json"),
    ]
    assert supervisor.PARENT_PID_ENV == protocol.PARENT_PID_ENV
