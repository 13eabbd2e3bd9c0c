"""Warm children forked from a fork server (:mod:`tuner.worker.fork_server`) that imported the
framework once, instead of started (each paying ~3-4 s of CPU for TensorFlow's import).

A server serves one spare key, lives until the search's spares are released, and dies with this
process. :class:`ForkedProcess` stands in for :class:`subprocess.Popen`: the supervisor it names
is the server's child, so its pid and exit status come over the server's socket.
"""

from __future__ import annotations

import array
import atexit
import contextlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Hashable
from pathlib import Path
from typing import IO, Any

from tuner.core.protocol import FORK_SERVER_MODULE
from tuner.driver.children._process import Child, child_environment, is_supervised, switch
from tuner.driver.children._trial_dirs import pid_alive

FORK_ENV = "TUNER_FORK_SERVER"
_SLICE_S = 0.05
_MAX_IDLE = 2
"""Servers kept at once when idle: a search's environments are the trial plan's and, rarely, a
baseline's. A server one of whose forks still runs is never closed for another."""
_FORK_WAIT_S = 120.0
"""How long to wait for a server to fork (its import first): past it, it is taken for hung."""
_CLEANUP_S = 10.0
"""How long a supervisor whose server died may take to end its trial (past its kill deadline)."""


def enabled() -> bool:
    """Whether warm children are forked from a server: where the supervisor runs (Linux), unless
    ``TUNER_FORK_SERVER=0``."""
    return is_supervised() and switch(FORK_ENV) is not None


class ForkServer:
    """One server process and the socket to it; thread-safe."""

    def __init__(self, backend: str, env: dict[str, str]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        command = [sys.executable, "-m", FORK_SERVER_MODULE, backend, str(theirs.fileno())]
        try:
            # No folder of its own: it writes nothing (its forks write in theirs); a failed
            # import ends it, and the spares then started say why, as their own import fails.
            self.proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=child_environment(env),
                pass_fds=(theirs.fileno(),),
                start_new_session=True,
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self._sock = ours
        self._poller = select.poll()
        self._poller.register(ours, select.POLLIN)
        self._lock = threading.Lock()
        self._next_id = 0
        self._pids: dict[int, int] = {}
        self._codes: dict[int, int] = {}
        self._gone = False

    def fork(self, folder: Path, worker_argv: list[str], spawned_at: float) -> Child:
        """A warm child for ``folder``, forked (``OSError`` when the server is gone)."""
        temp = folder / "tmp"
        temp.mkdir()
        stderr = (folder / "stderr.log").open("wb")
        with self._lock:
            ident, self._next_id = self._next_id, self._next_id + 1
        message = {
            "id": ident,
            "trial_dir": str(folder),
            "argv": worker_argv,
            "env": {"TMPDIR": str(temp)},
        }
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        # The fourth, the stdin's write end, the supervisor holds: a spare whose driver died
        # must not see its stdin end (it would exit as withdrawn before its supervisor, told by
        # the server's death, removes its folder).
        fds = array.array("i", [stdin_r, stdout_w, stderr.fileno(), stdin_w])
        try:
            self._sock.sendmsg(
                [json.dumps(message).encode()], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)]
            )
        except BaseException:
            for fd in (stdin_w, stdout_r):
                os.close(fd)
            stderr.close()
            raise
        finally:
            os.close(stdin_r)
            os.close(stdout_w)
        proc = ForkedProcess(self, ident, os.fdopen(stdin_w, "wb"), os.fdopen(stdout_r, "rb"))
        return Child(proc, folder, stderr, spawned_at)

    def alive(self) -> bool:
        return not self._gone and self.proc.poll() is None

    def busy(self) -> bool:
        """Whether a fork of its own may still run (forked or asked for, no exit status yet)."""
        with self._lock:
            self._pump(0.0)
            return not self._gone and len(self._codes) < self._next_id

    def pid_of(self, ident: int) -> int | None:
        """The forked supervisor's pid, once the server forked it (after its import); ``None`` if
        it never will (the server is gone, or hung: it is then ended)."""
        deadline = time.monotonic() + _FORK_WAIT_S
        while time.monotonic() < deadline:
            with self._lock:
                self._pump(_SLICE_S)
                if ident in self._pids:
                    return self._pids[ident] or None
                if self._gone:
                    return None
        self.close()
        return None

    def code_of(self, ident: int, timeout: float | None) -> int | None:
        """The exit status of ``ident`` (negative: a signal), waiting up to ``timeout``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = _SLICE_S if deadline is None else max(0.0, deadline - time.monotonic())
            with self._lock:
                self._pump(min(_SLICE_S, left))
                code, gone, pid = self._codes.get(ident), self._gone, self._pids.get(ident)
            if code is not None:
                return code
            if gone:
                # And with it the exit status: its supervisor, if it forked one, ends its trial as
                # on the driver's death; wait for that, as Popen.wait would.
                cleanup = time.monotonic() + _CLEANUP_S
                while pid and pid_alive(pid) and time.monotonic() < cleanup:
                    time.sleep(_SLICE_S)
                return -signal.SIGTERM
            if deadline is not None and time.monotonic() >= deadline:
                return None

    def close(self) -> None:
        """End the server: its supervisors see it die and end their trials."""
        with self._lock:
            self._gone = True
            self._sock.close()
        try:
            self.proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def _pump(self, timeout: float) -> None:
        # Under the lock: every message that is there, waiting up to ``timeout`` for the first.
        if self._gone:
            return
        try:
            if self._poller.poll(timeout * 1000) or self.proc.poll() is not None:
                self._drain()
        except OSError:
            self._gone = True

    def _drain(self) -> None:
        while True:
            try:
                data = self._sock.recv(1 << 16, socket.MSG_DONTWAIT)
            except BlockingIOError:
                if self.proc.poll() is None:
                    return
                data = b""  # it exited and everything it sent is read
            if not data:
                self._gone = True
                return
            message: dict[str, Any] = json.loads(data)
            if "pid" in message:
                self._pids[message["id"]] = message["pid"]
            if "code" in message:
                self._codes[message["id"]] = message["code"]


class ForkedProcess:
    """A :class:`~tuner.driver.children._process.Process` for a supervisor the server forked."""

    def __init__(self, server: ForkServer, ident: int, stdin: IO[bytes], stdout: IO[bytes]):
        self._server = server
        self._id = ident
        self.stdin: IO[bytes] | None = stdin
        self.stdout: IO[bytes] | None = stdout
        self.returncode: int | None = None

    @property
    def pid(self) -> int | None:
        return self._server.pid_of(self._id)

    def poll(self, timeout: float | None = 0.0) -> int | None:
        if self.returncode is None:
            self.returncode = self._server.code_of(self._id, timeout)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if (code := self.poll(timeout)) is None:
            raise subprocess.TimeoutExpired(FORK_SERVER_MODULE, timeout or 0.0)
        return code


_SERVERS: dict[Hashable, ForkServer] = {}
_LOCK = threading.Lock()


def fork_spare(
    key: Hashable, backend: str, env: dict[str, str], folder: Path, worker_argv: list[str]
) -> Child:
    """A warm child for ``key`` in ``folder``, forked from the key's server (started now when
    there is none: from the calling thread, whose end is the server's death signal); the folder
    goes if it cannot be, as :func:`~tuner.driver.children._process.spawn`'s does."""
    try:
        with _LOCK:
            # Put back last, the most recently used: the first idle one goes first.
            server = _SERVERS.pop(key, None)
            if server is not None and not server.alive():
                server.close()  # reaped: it is gone already
                server = None
            if server is None:
                idle = [k for k, s in _SERVERS.items() if not s.busy()]
                while idle and len(_SERVERS) >= _MAX_IDLE:
                    _SERVERS.pop(idle.pop(0)).close()
                server = ForkServer(backend, env)
            _SERVERS[key] = server
        return server.fork(folder, worker_argv, time.time())
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def close_all(idle_only: bool = False) -> None:
    """End every server (at exit), or each with no fork of its own running (another search in
    this process may still run a trial)."""
    with _LOCK:
        chosen = [k for k, s in _SERVERS.items() if not (idle_only and s.busy())]
        servers = [_SERVERS.pop(k) for k in chosen]
    for server in servers:
        with contextlib.suppress(OSError):
            server.close()


atexit.register(close_all)
