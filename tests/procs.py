"""Helpers for tests that run ``tuner search`` workers as real processes."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import optuna
from conftest import one_run_each, tuner_env
from optuna.trial import TrialState

from tuner.core.configurations import grid_point


def start_search(args: list[str], cwd: Path, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tuner", *one_run_each(["search", *args])],
        cwd=cwd,
        env=tuner_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def child_pids(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def wait_children(pid: int, within_s: float = 30) -> list[int]:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        found = child_pids(pid)
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError("the trial's child process was not found")


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def descendants(pid: int) -> list[int]:
    """Every living process below ``pid`` (children, their children, ...)."""
    found: list[int] = []
    frontier = [pid]
    while frontier:
        frontier = [c for parent in frontier for c in child_pids(parent) if alive(c)]
        found.extend(frontier)
    return found


def marker_pids(marker: str) -> list[int]:
    """The living processes whose argv[0] starts with ``marker`` (``exec -a MARKER ...``)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv0 = (entry / "cmdline").read_bytes().split(b"\0", 1)[0]
        except OSError:
            continue
        if argv0.startswith(marker.encode()) and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def wait_until(predicate: Callable[[], bool], within_s: float, poll_s: float = 0.1) -> bool:
    """Whether ``predicate()`` became true within ``within_s``."""
    deadline = time.monotonic() + within_s
    while True:
        if predicate():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(poll_s)


def wait_gone(pids: list[int], within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not any(alive(p) for p in pids):
            return True
        time.sleep(0.1)
    return False


def load(url: str, name: str = "small") -> optuna.Study:
    if url.startswith("journal:"):
        from optuna.storages.journal import JournalFileBackend

        storage = optuna.storages.JournalStorage(JournalFileBackend(url.split(":", 1)[1]))
        return optuna.load_study(study_name=name, storage=storage)
    return optuna.load_study(study_name=name, storage=url)


def wait_running(url: str, batch: int, within_s: float = 120) -> None:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            trials = load(url).get_trials(states=(TrialState.RUNNING,))
        except KeyError:
            trials = []
        if any(t.params.get("global_batch_size") == batch for t in trials):
            return
        time.sleep(0.3)
    raise AssertionError(f"no RUNNING trial at batch {batch} within {within_s} s")


def finished_trials(url: str) -> dict[int, tuple[str, object]]:
    """The finished trials of study ``small`` at ``url`` (none before it exists): number ->
    (state, values)."""
    try:
        trials = load(url).get_trials()
    except KeyError:
        return {}
    return {t.number: (t.state.name, t.values) for t in trials if t.state.is_finished()}


def wait_new_result(
    url: str, known: dict[int, object], worker: subprocess.Popen[str], within_s: float = 300
) -> bool:
    """Wait until a COMPLETE trial that is not in ``known`` is stored (True), or ``worker`` has
    exited without one (False)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        found = finished_trials(url)
        if any(state == "COMPLETE" and n not in known for n, (state, _) in found.items()):
            return True
        if worker.poll() is not None:
            return False
        time.sleep(0.3)
    raise AssertionError(f"no new COMPLETE trial within {within_s} s")


def assert_grid_settled(study: optuna.Study, points: set[tuple[int, str]]) -> None:
    trials = study.get_trials()
    assert not [t.number for t in trials if t.state in (TrialState.RUNNING, TrialState.WAITING)]
    settled = {grid_point(t) for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)}
    assert settled == points


def free_port_pair() -> int:
    """A port whose next one is free too (a gang's PORT and its trials' JAX runtime's PORT+1)."""
    for _ in range(50):
        with socket.socket() as first:
            first.bind(("127.0.0.1", 0))
            port = first.getsockname()[1]
            if port >= 65535:
                continue
            with socket.socket() as second:
                try:
                    second.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
            return port
    raise AssertionError("no two free adjacent ports on 127.0.0.1")
