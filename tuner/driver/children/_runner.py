"""Runs one request in a fresh child process (``python -m tuner.worker``) in its own session.

A fresh interpreter per trial (the ``spawn`` model) because TensorFlow keeps device memory until its
process exits and device options can only be set before its runtime starts; its own session so the
whole process group can be killed on timeout or interrupt. The child never touches the storage.

On Linux the child runs under a small supervisor (:mod:`tuner.worker.supervisor`, a child
subreaper) that kills everything the trial started, even processes in a session of their own, when
the child ends, when it is told to stop and when this process dies, SIGKILL included.

A request may be handed to a warm child instead, started earlier for the same environment
(:mod:`tuner.driver.children._warm`); its run's wall time and timeout start at hand-over.

:class:`ProcessRunner` is this as the driver's
:class:`~tuner.driver.children._interface.ChildRunner`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Hashable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

from tuner.core.outcome import ChildRun
from tuner.core.protocol import (
    IDLE_FLAG,
    PARENT_PID_ENV,
    SUPERVISOR_MODULE,
    TRIAL_DIR_PREFIX,
    WARM_FLAG,
    WORKER_MODULE,
    Event,
    InspectRequest,
    Request,
    WindowsDoneEvent,
    decode_event,
    encode_request,
)
from tuner.driver.children import _trial_dirs as trial_dirs
from tuner.driver.children import _warm as warm
from tuner.driver.children._interface import OnEvent
from tuner.files import atomic_write_text

_GRACE_S = 3.0
_ORDER_POLL_S = 0.05
"""How often the waiting thread looks for the child's exit while it also waits for its
``windows_done``: a child that exits before it (an error) is noticed this much later."""
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[3])
"""The folder holding the ``tuner`` package: first on the children's path (the supervisor runs
without site-packages)."""


class ProcessRunner:
    """The real :class:`~tuner.driver.children._interface.ChildRunner`: each request in a fresh
    child process (or the warm one waiting for it), under its supervisor: :func:`run_child`."""

    def run(
        self,
        request: Request,
        env: dict[str, str],
        timeout_s: float,
        on_event: OnEvent | None = None,
    ) -> ChildRun:
        """:func:`run_child`."""
        return run_child(request, env, timeout_s, on_event)


def run_child(
    request: Request,
    env: dict[str, str],
    timeout_s: float,
    on_event: OnEvent | None = None,
) -> ChildRun:
    """Run ``request`` in a child with ``env`` added to the environment; wait at most ``timeout_s``.

    On timeout the child's process group gets SIGTERM, then SIGKILL. On KeyboardInterrupt (or any
    exception here) the group is killed before the exception propagates.
    """
    _sweep_once()
    key = _spare_key(request, env)
    child = _warm_child(request, key) or _cold_child(request, env)
    try:
        order = _next_spare(request, env)
        events = on_event if order is None else order.watching(on_event)
        timed_out = _wait(child.proc, timeout_s, events, order)
        result_path = child.folder / "result.json"
        result_text = result_path.read_text() if result_path.exists() else None
        ended_at = time.time()
        return ChildRun(
            returncode=child.proc.returncode,
            result_text=result_text,
            stderr_tail=_file_tail(child.folder / "stderr.log"),
            timed_out=timed_out,
            wall_s=ended_at - child.spawned_at,
            spawned_at=child.spawned_at,
            ended_at=ended_at,
        )
    finally:
        child.close()


@dataclass
class _Child:
    """A started child in its trial folder (request, result, stderr, owner record);
    ``spawned_at``: when its run began (a warm child: its hand-over)."""

    proc: subprocess.Popen[bytes]
    folder: Path
    stderr: BinaryIO
    spawned_at: float

    def alive(self) -> bool:
        return self.proc.poll() is None

    def discard(self) -> None:
        """Kill it (a spare no one will take) and remove its folder."""
        kill_group(self.proc)
        _reap_group(self.proc)
        self.close()

    def close(self) -> None:
        for stream in (self.proc.stdin, self.proc.stdout, self.stderr):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def _new_folder() -> Path:
    folder = Path(tempfile.mkdtemp(prefix=TRIAL_DIR_PREFIX))
    trial_dirs.write_owner(folder)
    return folder


def _cold_child(request: Request, env: dict[str, str]) -> _Child:
    """A fresh child that reads ``request`` as it starts."""
    folder = _new_folder()
    request_path, result_path = folder / "request.json", folder / "result.json"
    spawned_at = time.time()
    request_path.write_text(encode_request(replace(request, spawned_at=spawned_at)))
    return _spawn(folder, child_command(request_path, result_path), env, spawned_at)


def _spawn(folder: Path, command: list[str], env: dict[str, str], spawned_at: float) -> _Child:
    stderr = (folder / "stderr.log").open("wb")
    try:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE if WARM_FLAG in command else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=_child_environment(env),
            start_new_session=True,
        )
    except BaseException:
        stderr.close()
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return _Child(proc, folder, stderr, spawned_at)


def _spare_key(request: Request, env: dict[str, str]) -> Hashable:
    """What a warm child must have been started with to take ``request``: the same environment
    (the plan's, and this process's as the child inherits it), backend and working folder."""
    backend = request.workload.backend
    return (tuple(sorted(_child_environment(env).items())), backend, os.getcwd())


def _start_spare(request: Request, env: dict[str, str], *, idle: bool = False) -> None:
    """Have a warm child started for the next request, in ``env``; ``idle``: importing at idle
    priority (:mod:`tuner.driver.children._warm`)."""
    backend = request.workload.backend
    key = _spare_key(request, env)

    def spawn() -> _Child:
        folder = _new_folder()
        paths = (folder / "request.json", folder / "result.json")
        command = child_command(*paths, backend, idle=idle)
        spare = _spawn(folder, command, env, time.time())
        if idle:
            warm.enter_idle(spare.proc.pid)
        return spare

    warm.POOL.start(key, spawn)


def _warm_child(request: Request, key: Hashable) -> _Child | None:
    """The spare started for ``key``, handed ``request``: it was waiting for it on stdin. ``None``
    when there is none (or it died meanwhile: the caller starts a fresh child)."""
    spare = warm.POOL.take(key)
    if spare is None:
        return None
    assert isinstance(spare, _Child)
    warm.leave_idle(spare.proc.pid)
    spawned_at = time.time()
    try:
        atomic_write_text(
            spare.folder / "request.json", encode_request(replace(request, spawned_at=spawned_at))
        )
        assert spare.proc.stdin is not None
        spare.proc.stdin.write(b"go\n")
        spare.proc.stdin.close()
    except OSError:  # it died just now
        spare.discard()
        return None
    except BaseException:  # taken from the pool but not handed over: no one else will end it
        spare.discard()
        raise
    spare.spawned_at = spawned_at
    return spare


class _SpareOrder:
    """The next warm child, wanted at once (``idle``: it imports at idle priority) or once the
    running child's timed windows are over. The event reader only notes the latter (and moves an
    idle spare to the normal class then: nothing is timed any more, and on cores that other work
    keeps busy an idle import would otherwise wait for the hand-over); the thread that waits for
    the child starts it (see :mod:`tuner.driver.children._warm` for why not a helper thread)."""

    def __init__(self, request: Request, env: dict[str, str], *, idle: bool = False) -> None:
        self.wanted = threading.Event()
        if idle:
            self.wanted.set()
        self._request = request
        self._env = env
        self._idle = idle

    def watching(self, on_event: OnEvent | None) -> OnEvent:
        """``on_event``, noting ``windows_done`` on the way."""

        def passing_on(event: Event) -> None:
            if isinstance(event, WindowsDoneEvent):
                self.wanted.set()
                spare = warm.POOL.spare()
                if self._idle and isinstance(spare, _Child):
                    warm.leave_idle(spare.proc.pid)
            if on_event is not None:
                on_event(event)

        return passing_on

    def start(self) -> None:
        _start_spare(self._request, warm.POOL.expected() or self._env, idle=self._idle)


def _next_spare(request: Request, env: dict[str, str]) -> _SpareOrder | None:
    """The warm child to start for the run after this one: at once beside the workload check
    (for the environment the driver expects next), or, for a training run, the returned order:
    at once at idle priority where permitted, else when its timed windows are over."""
    allowed = warm.uses()
    if isinstance(request, InspectRequest):
        expected = warm.POOL.expected()
        if expected is not None and warm.CHECK in allowed:
            _start_spare(request, expected)
        return None
    if warm.TRIALS not in allowed:
        return None
    return _SpareOrder(request, env, idle=warm.starts_early())


def is_supervised() -> bool:
    """Whether trial children run under the supervisor: where the kernel lets it adopt orphans
    (Linux); elsewhere the process group is all there is to kill."""
    return sys.platform.startswith("linux")


def child_command(
    request_path: Path, result_path: Path, warm_backend: str | None = None, *, idle: bool = False
) -> list[str]:
    """The command line of one trial child (under its supervisor where supported); with
    ``warm_backend``, a warm child that imports it before its request, at idle priority with
    ``idle`` (:mod:`tuner.driver.children._warm`)."""
    warm = [WARM_FLAG, warm_backend, *([IDLE_FLAG] if idle else [])] if warm_backend else []
    worker = [sys.executable, "-m", WORKER_MODULE, *warm, str(request_path), str(result_path)]
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


def _wait(
    proc: subprocess.Popen[bytes],
    timeout_s: float,
    on_event: OnEvent | None,
    order: _SpareOrder | None = None,
) -> bool:
    """Pass the child's events on until it exits; whether it had to be killed for ``timeout_s``.
    With ``order``, start the next warm child here once the child's windows are over.

    Whatever happens, nothing of the child's process group outlives this call.
    """
    reader = threading.Thread(
        target=_read_events, args=(proc, on_event), name="tuner-events", daemon=True
    )
    reader.start()
    timed_out = False
    deadline = time.monotonic() + timeout_s
    try:
        if order is not None:
            _start_when_wanted(proc, deadline, order)
        proc.wait(timeout=max(0.0, deadline - time.monotonic()))
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


def _start_when_wanted(proc: subprocess.Popen[bytes], deadline: float, order: _SpareOrder) -> None:
    # Until the child exits or its windows are over; then the spare starts from this thread.
    while proc.poll() is None and time.monotonic() < deadline:
        if order.wanted.wait(_ORDER_POLL_S):
            order.start()
            return


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
