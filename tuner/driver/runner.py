"""Runs one request in a fresh child process (``python -m tuner.worker``) in its own session.

A fresh interpreter per trial (the ``spawn`` model) because TensorFlow keeps device memory until its
process exits and device options can only be set before its runtime starts; its own session so the
whole process group can be killed on timeout or interrupt. The child never touches the storage.

On Linux the child runs under a small supervisor (:mod:`tuner.worker.supervisor`, a child
subreaper) that kills everything the trial started, even processes in a session of their own, when
the child ends, when it is told to stop and when this process dies, SIGKILL included.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tuner.core.outcome import ChildRun
from tuner.core.protocol import (
    PARENT_PID_ENV,
    SUPERVISOR_MODULE,
    TRIAL_DIR_PREFIX,
    WORKER_MODULE,
    decode_event,
)
from tuner.driver import trial_dirs

OnEvent = Callable[[dict[str, Any]], None]

_GRACE_S = 3.0
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
"""The folder holding the ``tuner`` package: first on the children's path (the supervisor runs
without site-packages)."""


def run_child(
    request: dict[str, Any],
    env: dict[str, str],
    timeout_s: float,
    on_event: OnEvent | None = None,
) -> ChildRun:
    """Run ``request`` in a child with ``env`` added to the environment; wait at most ``timeout_s``.

    On timeout the child's process group gets SIGTERM, then SIGKILL. On KeyboardInterrupt (or any
    exception here) the group is killed before the exception propagates.
    """
    _sweep_once()
    with tempfile.TemporaryDirectory(prefix=TRIAL_DIR_PREFIX) as tmp:
        trial_dirs.write_owner(Path(tmp))
        request_path = Path(tmp, "request.json")
        result_path = Path(tmp, "result.json")
        stderr_path = Path(tmp, "stderr.log")
        spawned_at = time.time()
        request_path.write_text(json.dumps({**request, "spawned_at": spawned_at}))
        with stderr_path.open("wb") as stderr:
            proc = subprocess.Popen(
                child_command(request_path, result_path),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=_child_environment(env),
                start_new_session=True,
            )
            timed_out = _wait(proc, timeout_s, on_event)
        result_text = result_path.read_text() if result_path.exists() else None
        ended_at = time.time()
        return ChildRun(
            returncode=proc.returncode,
            result_text=result_text,
            stderr_tail=_file_tail(stderr_path),
            timed_out=timed_out,
            wall_s=ended_at - spawned_at,
            spawned_at=spawned_at,
            ended_at=ended_at,
        )


def is_supervised() -> bool:
    """Whether trial children run under the supervisor: where the kernel lets it adopt orphans
    (Linux); elsewhere the process group is all there is to kill."""
    return sys.platform.startswith("linux")


def child_command(request_path: Path, result_path: Path) -> list[str]:
    """The command line of one trial child (under its supervisor where supported)."""
    worker = [sys.executable, "-m", WORKER_MODULE, str(request_path), str(result_path)]
    if not is_supervised():
        return worker
    # -S: no site-packages start-up (tens of ms); tuner is importable through PYTHONPATH.
    supervisor = [sys.executable, "-S", "-m", SUPERVISOR_MODULE]
    return [*supervisor, "--trial-dir", str(request_path.parent), "--", *worker]


@functools.cache
def _sweep_once() -> None:
    # Once per process: the trial folders of workers that died before they could remove them.
    trial_dirs.sweep()


_STORAGE_ENV = ("TUNER_STORAGE", "TUNER_STORAGE_FILE")


def _child_environment(env: dict[str, str]) -> dict[str, str]:
    """This process's environment with ``env`` on top; tuner importable from its source tree.

    The storage URL stays out: the child never touches the storage, and the user's workload code
    runs there, so it has no business seeing a database password."""
    inherited = {k: v for k, v in os.environ.items() if k not in _STORAGE_ENV}
    child_env = {
        **inherited,
        **env,
        "PYTHONUNBUFFERED": "1",
        PARENT_PID_ENV: str(os.getpid()),
    }
    child_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (_PACKAGE_ROOT, os.environ.get("PYTHONPATH", "")) if p
    )
    return child_env


def _wait(proc: subprocess.Popen[bytes], timeout_s: float, on_event: OnEvent | None) -> bool:
    """Pass the child's events on until it exits; whether it had to be killed for ``timeout_s``.

    Whatever happens, nothing of the child's process group outlives this call.
    """
    reader = threading.Thread(
        target=_read_events, args=(proc, on_event), name="tuner-events", daemon=True
    )
    reader.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_group(proc)
    except BaseException:
        kill_group(proc)
        raise
    finally:
        _reap_group(proc)
    reader.join(timeout=5)
    return timed_out


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the child's process group, then SIGKILL whatever is left after a grace period.

    The group holds the supervisor, which on SIGTERM kills the whole tree (other sessions too) and
    exits; SIGKILL is for a supervisor that could not."""
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=_GRACE_S)
    except subprocess.TimeoutExpired:
        _signal_group(proc.pid, signal.SIGKILL)
        proc.wait()


def _reap_group(proc: subprocess.Popen[bytes]) -> None:
    # The leader is gone; anything it started in its session goes too.
    _signal_group(proc.pid, signal.SIGKILL)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _read_events(proc: subprocess.Popen[bytes], on_event: OnEvent | None) -> None:
    # Drains stdout to the end (a full pipe would block the child), passing events on.
    assert proc.stdout is not None
    for raw in proc.stdout:
        event = decode_event(raw.decode("utf-8", "replace"))
        if on_event is not None and event is not None:
            on_event(event)


def _file_tail(path: Path, limit: int = 8000) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - limit))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
