"""The trial's supervisor: ``python -m tuner.worker.supervisor [--trial-dir DIR] -- COMMAND...``.

A *child subreaper* between the driver and the trial child, so that nothing a trial started
outlives it (what it does and why not a cgroup: docs/design/architecture.md, "Why a child process
per trial"); after the driver's death it also removes ``--trial-dir``. Started, it imports
nothing from tuner and nothing heavy; the fork server instead calls :func:`supervise` with a
``start`` that forks the worker.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple, NoReturn

PARENT_PID_ENV = "TUNER_PARENT_PID"
"""The pid whose death ends the trial (:data:`tuner.core.protocol.PARENT_PID_ENV`, not imported)."""

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36

STOP_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT, signal.SIGHUP})
PARENT_GONE = signal.SIGUSR1
"""The parent-death signal: not SIGTERM, which the driver sends to stop a trial it still waits for.
(``getppid()`` cannot tell them apart: when a multi-threaded driver is killed, the thread that
started us can exit first and we are handed to a sibling thread, so our parent pid stays the same.)
The kernel sends it when the thread that started us exits; that thread waits in ``run_child`` for
as long as we run, so it exits first only when the whole driver dies."""
WATCHED = STOP_SIGNALS | {signal.SIGCHLD, PARENT_GONE}
POLL_S = 0.5
"""How often the parent is checked when no signal comes (its death signal is the fast way)."""
KILL_DEADLINE_S = 5.0
"""How long to keep killing a tree that will not die (a process stuck in the kernel)."""


class Ending(NamedTuple):
    """Why the wait ended: the child's exit code (negative: its signal), a stop, the parent gone."""

    code: int | None = None
    stop: int | None = None
    orphaned: bool = False


def parse_args(argv: list[str]) -> tuple[str | None, list[str]]:
    """``[--trial-dir DIR] -- COMMAND...`` -> (DIR or None, COMMAND)."""
    trial_dir = None
    rest = list(argv)
    if rest[:1] == ["--trial-dir"] and len(rest) >= 2:
        trial_dir, rest = rest[1], rest[2:]
    if rest[:1] == ["--"]:
        rest = rest[1:]
    if not rest:
        raise SystemExit("usage: python -m tuner.worker.supervisor [--trial-dir DIR] -- COMMAND...")
    return trial_dir, rest


def descendants(parents: Mapping[int, int], root: int) -> list[int]:
    """The pids below ``root`` in a ``pid -> parent pid`` map, parents before their children."""
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    found: list[int] = []
    frontier = [root]
    while frontier:
        below = [pid for parent in frontier for pid in children.get(parent, ())]
        found.extend(below)
        frontier = below
    return found


def process_table() -> tuple[dict[int, int], set[int]]:
    """``pid -> parent pid`` of every process, and the zombies (empty without ``/proc``)."""
    parents: dict[int, int] = {}
    zombies: set[int] = set()
    with contextlib.suppress(OSError):
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as handle:
                    fields = handle.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue  # gone meanwhile
            parents[int(entry)] = int(fields[1])
            if fields[0] == b"Z":
                zombies.add(int(entry))
    return parents, zombies


def reap_children() -> dict[int, int]:
    """Reap every child that has ended, without waiting: ``pid -> exit code`` (negative: signal)."""
    reaped: dict[int, int] = {}
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid == 0:
            return reaped
        reaped[pid] = os.waitstatus_to_exitcode(status)


def kill_descendants(deadline_s: float = KILL_DEADLINE_S) -> dict[int, int]:
    """Freeze, kill and reap every process below this one until none is left (or ``deadline_s``
    passed); the exit codes of the children reaped meanwhile."""
    me = os.getpid()
    reaped: dict[int, int] = {}
    deadline = time.monotonic() + deadline_s
    while True:
        living = _freeze(me)
        _signal_all(living, signal.SIGKILL)
        reaped.update(reap_children())
        if not living or time.monotonic() > deadline:
            return reaped
        time.sleep(0.01)


def _freeze(root: int) -> set[int]:
    # Stopped processes cannot fork: repeat until a scan finds no new one, so that a child forked
    # while we looked is stopped too before anything is killed.
    stopped: set[int] = set()
    while True:
        # A zombie can still have children: a multi-threaded process whose main thread has
        # exited shows as one while its other threads (and its children) live on.
        parents, zombies = process_table()
        new = set(descendants(parents, root)) - zombies - stopped
        if not new:
            return stopped
        _signal_all(new, signal.SIGSTOP)
        stopped |= new


def _signal_all(pids: Iterable[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def die_with_parent(sig: int) -> bool:
    """Have the kernel send ``sig`` when the thread that started us exits; whether it could."""
    return _prctl(PR_SET_PDEATHSIG, sig)


def _prctl(option: int, value: int) -> bool:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False  # not Linux: no subreaper, no parent-death signal; the watcher still works


def spawn(command: list[str]) -> int:
    """Start ``command`` with this process as the parent it watches, its signals as a fresh process
    has them (this one blocks some, Python ignores SIGPIPE and SIGXFSZ); its pid."""
    env = {**os.environ, PARENT_PID_ENV: str(os.getpid())}
    defaults = [getattr(signal, name) for name in ("SIGPIPE", "SIGXFSZ") if hasattr(signal, name)]
    return os.posix_spawnp(command[0], command, env, setsigmask=(), setsigdef=defaults)


def wait(child: int, parent: int) -> Ending:
    """Wait until the child ends, a stop signal comes or the parent dies; whichever is first."""
    while True:
        info = signal.sigtimedwait(WATCHED, POLL_S)
        reaped = reap_children()
        if child in reaped:
            return Ending(code=reaped[child])
        if is_orphaned(parent) or (info is not None and info.si_signo == PARENT_GONE):
            return Ending(orphaned=True)
        if info is not None and info.si_signo in STOP_SIGNALS:
            return Ending(stop=info.si_signo)


def is_orphaned(parent: int) -> bool:
    """Whether the process that started this one has died (we were reparented)."""
    return os.getppid() != parent


def exit_like(code: int) -> NoReturn:
    """End with exit code ``code``, or, when negative, by signal ``-code`` without dumping core."""
    if code >= 0:
        os._exit(code)
    sig = -code
    with contextlib.suppress(OSError, ValueError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    _prctl(PR_SET_DUMPABLE, 0)  # also stops a core_pattern pipe, which ignores RLIMIT_CORE
    with contextlib.suppress(OSError, ValueError):  # SIGKILL has no disposition to reset
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})
    os.kill(os.getpid(), sig)
    os._exit(128 + sig)  # a signal whose default is not to terminate


def _remove(trial_dir: str | None) -> None:
    if trial_dir:
        import shutil  # only after the driver died: not worth its import at every start

        shutil.rmtree(trial_dir, ignore_errors=True)


def main(argv: list[str]) -> NoReturn:
    """Run ``COMMAND`` as the supervised trial child; end as it ended."""
    trial_dir, command = parse_args(argv)
    # Blocked from the start and collected by sigtimedwait: no handler runs at a bad moment.
    signal.pthread_sigmask(signal.SIG_BLOCK, WATCHED)
    parent = int(os.environ.get(PARENT_PID_ENV, os.getppid()))

    def start() -> int:
        try:
            return spawn(command)
        except OSError as exc:
            sys.stderr.write(f"tuner supervisor: cannot start {command[0]}: {exc}\n")
            os._exit(127)

    supervise(trial_dir, parent, start)


def supervise(trial_dir: str | None, parent: int, start: Callable[[], int]) -> NoReturn:
    """Become the trial's subreaper, start its child (``start``: its pid), wait, end as it ended.
    :data:`WATCHED` must be blocked already (before ``parent`` could die unseen)."""
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    die_with_parent(PARENT_GONE)
    if is_orphaned(parent):  # the parent died before the parent-death signal was set
        _remove(trial_dir)
        exit_like(-signal.SIGTERM)
    child = start()
    ending = wait(child, parent)
    reaped = kill_descendants()
    if ending.orphaned:
        _remove(trial_dir)
    if ending.code is not None:
        exit_like(ending.code)
    if ending.stop is not None:
        exit_like(-ending.stop)
    exit_like(reaped.get(child, -signal.SIGTERM))


if __name__ == "__main__":
    main(sys.argv[1:])
