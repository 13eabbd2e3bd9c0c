"""Runs one request in a fresh child process (``python -m tuner.worker``) in its own session.

A fresh interpreter per trial (the ``spawn`` model) because TensorFlow keeps device memory until its
process exits and device options can only be set before its runtime starts; its own session so the
whole process group can be killed on timeout or interrupt. The child never touches the storage.
"""

from __future__ import annotations

import contextlib
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
from tuner.core.protocol import WORKER_MODULE, decode_event

OnEvent = Callable[[dict[str, Any]], None]

_GRACE_S = 3.0
_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent)


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
    with tempfile.TemporaryDirectory(prefix="tuner-trial-") as tmp:
        request_path = Path(tmp, "request.json")
        result_path = Path(tmp, "result.json")
        stderr_path = Path(tmp, "stderr.log")
        spawned_at = time.time()
        request_path.write_text(json.dumps({**request, "spawned_at": spawned_at}))
        with stderr_path.open("wb") as stderr:
            proc = subprocess.Popen(
                [sys.executable, "-m", WORKER_MODULE, str(request_path), str(result_path)],
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


def _child_environment(env: dict[str, str]) -> dict[str, str]:
    """This process's environment with ``env`` on top; tuner importable from its source tree."""
    child_env = {
        **os.environ,
        **env,
        "PYTHONUNBUFFERED": "1",
        "TUNER_PARENT_PID": str(os.getpid()),
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
    """SIGTERM the child's process group, then SIGKILL whatever is left after a grace period."""
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
