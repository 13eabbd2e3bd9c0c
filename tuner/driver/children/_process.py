"""A trial child as a process: its command line (under the supervisor where the kernel allows),
its environment, its trial folder, and how its process group is ended."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, BinaryIO, Protocol

from tuner.core.protocol import (
    PARENT_PID_ENV,
    SUPERVISOR_MODULE,
    TRIAL_DIR_PREFIX,
    WARM_FLAG,
    WORKER_MODULE,
)
from tuner.driver.children import _trial_dirs as trial_dirs

_GRACE_S = 3.0
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[3])
"""The folder holding the ``tuner`` package: first on the children's path (the supervisor runs
without site-packages)."""


class Process(Protocol):
    """What the runner uses of :class:`subprocess.Popen`, or of a fork server's
    :class:`~tuner.driver.children._forked.ForkedProcess` (``pid`` ``None``: never forked)."""

    @property
    def pid(self) -> int | None: ...

    stdin: IO[bytes] | None
    stdout: IO[bytes] | None
    returncode: int | None

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


@dataclass
class Child:
    """A started child in its trial folder (request, result, stderr, owner record);
    ``spawned_at``: when its run began (a warm child: its hand-over)."""

    proc: Process
    folder: Path
    stderr: BinaryIO
    spawned_at: float

    def alive(self) -> bool:
        return self.proc.poll() is None

    def discard(self) -> None:
        """Kill it (a spare no one will take) and remove its folder."""
        kill_group(self.proc)
        reap_group(self.proc)
        self.close()

    def close(self) -> None:
        for stream in (self.proc.stdin, self.proc.stdout, self.stderr):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def new_folder() -> Path:
    folder = Path(tempfile.mkdtemp(prefix=TRIAL_DIR_PREFIX))
    trial_dirs.write_owner(folder)
    return folder


def spawn(folder: Path, command: list[str], env: dict[str, str], spawned_at: float) -> Child:
    stderr = (folder / "stderr.log").open("wb")
    # The child's temporary files (TensorFlow's autograph sources, the workload's own) go in its
    # trial folder and with it: a child ends by os._exit, so no atexit clean-up of theirs runs.
    temp = folder / "tmp"
    temp.mkdir()
    try:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE if WARM_FLAG in command else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env={**child_environment(env), "TMPDIR": str(temp)},
            start_new_session=True,
        )
    except BaseException:
        stderr.close()
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return Child(proc, folder, stderr, spawned_at)


_OFF = frozenset({"0", "off", "false", "no"})


def switch(name: str) -> str | None:
    """The environment variable ``name`` as a switch: its value, lower case (``"1"`` unset), or
    ``None`` when it says off (``0``, ``off``, ``false``, ``no``)."""
    value = os.environ.get(name, "1").strip().lower()
    return None if value in _OFF else value


def is_supervised() -> bool:
    """Whether trial children run under the supervisor: where the kernel lets it adopt orphans
    (Linux); elsewhere the process group is all there is to kill."""
    return sys.platform.startswith("linux")


def worker_args(
    request_path: Path, result_path: Path, warm_backend: str | None = None
) -> list[str]:
    """The worker's arguments after ``-m tuner.worker`` (a warm one's: ``--warm BACKEND`` first)."""
    warm = [WARM_FLAG, warm_backend] if warm_backend else []
    return [*warm, str(request_path), str(result_path)]


def child_command(
    request_path: Path, result_path: Path, warm_backend: str | None = None
) -> list[str]:
    """The command line of one trial child (under its supervisor where supported); with
    ``warm_backend``, a warm child that imports it before its request."""
    args = worker_args(request_path, result_path, warm_backend)
    worker = [sys.executable, "-m", WORKER_MODULE, *args]
    if not is_supervised():
        return worker
    # -S: no site-packages start-up (tens of ms); tuner is importable through PYTHONPATH.
    supervisor = [sys.executable, "-S", "-m", SUPERVISOR_MODULE]
    return [*supervisor, "--trial-dir", str(request_path.parent), "--", *worker]


_STORAGE_ENV = ("TUNER_STORAGE", "TUNER_STORAGE_FILE")


def child_environment(env: dict[str, str]) -> dict[str, str]:
    """This process's environment with ``env`` on top; tuner importable from its source tree. The
    storage URL stays out: the user's code runs there, and has no business seeing a password."""
    inherited = {k: v for k, v in os.environ.items() if k not in _STORAGE_ENV}
    path = os.pathsep.join(p for p in (_PACKAGE_ROOT, os.environ.get("PYTHONPATH", "")) if p)
    fixed = {"PYTHONUNBUFFERED": "1", PARENT_PID_ENV: str(os.getpid()), "PYTHONPATH": path}
    return {**inherited, **env, **fixed}


def kill_group(proc: Process) -> None:
    """SIGTERM the child's process group (the supervisor then kills the whole tree, other sessions
    too), then SIGKILL whatever is left after a grace period."""
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=_GRACE_S)
    except subprocess.TimeoutExpired:
        _signal_group(proc.pid, signal.SIGKILL)
        proc.wait()


def reap_group(proc: Process) -> None:
    # The leader is gone; anything it started in its session goes too.
    _signal_group(proc.pid, signal.SIGKILL)


def _signal_group(pgid: int | None, sig: signal.Signals) -> None:
    if pgid is None:  # a fork the fork server never made: nothing to signal
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
