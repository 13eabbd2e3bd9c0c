"""The warm child: the next run's process, started while the current one finishes.

Each child pays an interpreter start and the framework's import (~3 s of TensorFlow on our
machines). A warm child pays it early: the
driver starts it (``python -m tuner.worker --warm BACKEND ...``, :mod:`tuner.worker.warm`) when

- the running child starts, where the operating system lets a process leave the idle
  scheduling class again (Linux ``SCHED_IDLE``; :func:`idle_allowed`): the spare imports in that
  class (``--idle``), taking only CPU time the running trial leaves unused, so a timed window
  loses nothing to it; once the running child reports its rates measured (``windows_done``,
  below), and at the latest at hand-over, the driver moves the spare's threads back to the
  normal class (:func:`leave_idle`), import finished or not — on cores that other work keeps
  busy an idle import gets almost no CPU time, and would then cost more than one started late.
  Where the kernel shares CPU time between sessions first (autogroup, on by default in most
  Linux distributions), the idle class only ranks threads within the spare's own session — a
  session of its own, which alone would still get as much CPU time as the running child's (one
  busy loop: half as fast beside it, measured) — so the spare's session gets the lowest weight
  too (its autogroup's nice 19, :func:`enter_idle`), and back to 0 when it leaves;
- elsewhere, when the running child reports its rates measured (``windows_done``, after the last
  window, its noise-scale steps and loss checks, and its input probe): the import then shares
  the cores with the current run's validation pass and hand-back, never with a window or probe
  whose rate is measured;
- the workload check starts (a CPU-only child that measures nothing): the check and the first
  run's import overlap.

The warm child imports and then waits on its stdin; it touches no device before its request (the
session sets devices up after it). :func:`tuner.driver.children._runner.run_child` hands it the next
request only when the previous child has exited, so the devices are free, and only when it was
started for the same environment (the device plan's, the working folder) and backend; any other
request kills it and starts a fresh child. Its trial's wall time and timeout start at hand-over;
the import done before is stored as ``import_hidden_s``, outside the wall.

At most one spare lives at a time. It is killed when the study ends (:func:`release`), at exit,
and when the environment changes; if the driver dies, even by SIGKILL, its supervisor gets the
parent-death signal and kills it and removes its trial folder, as for any trial. A spare that
died while waiting is replaced by a fresh child, unseen.

Spares are started from the thread that runs the children (the one in ``run_child``), never from
a helper thread: the supervisor's parent-death signal follows the thread that started it, and a
spare started from a helper thread trained 2-4x slower once handed a single-device run (measured
on the CPU baseline; cause not found), while one started from the main thread did not.

``TUNER_WARM_CHILD`` switches it for measurement: unset or ``1`` both uses, ``0`` neither,
``trials`` only the spare for the next run, ``check`` only the overlap with the workload check,
``late`` both uses with the spare always started after the windows (never idle).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import threading
import time
from collections.abc import Callable, Hashable, Iterator, Mapping
from typing import Protocol

WARM_ENV = "TUNER_WARM_CHILD"
TRIALS = "trials"
CHECK = "check"
LATE = "late"
_OFF = frozenset({"0", "off", "false", "no"})


def _switch() -> str:
    return os.environ.get(WARM_ENV, "1").strip().lower()


def uses() -> frozenset[str]:
    """Which uses of a warm child ``TUNER_WARM_CHILD`` allows (:data:`TRIALS`, :data:`CHECK`)."""
    value = _switch()
    if value in _OFF:
        return frozenset()
    if value in (TRIALS, CHECK):
        return frozenset({value})
    return frozenset({TRIALS, CHECK})


def starts_early() -> bool:
    """Whether the spare for the next run starts with the running child, importing at idle
    priority (:func:`idle_allowed`, unless ``TUNER_WARM_CHILD=late``), rather than after its
    windows."""
    return _switch() != LATE and idle_allowed()


@functools.cache
def idle_allowed() -> bool:
    """Whether a thread of this process may enter the idle scheduling class and leave it again:
    Linux, and root, ``CAP_SYS_NICE`` or an ``RLIMIT_NICE`` of 20 (children inherit the same
    rights). Tried once, in a thread of its own, which then ends."""
    if not hasattr(os, "SCHED_IDLE"):
        return False
    allowed: list[bool] = []

    def round_trip() -> None:
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
            allowed.append(True)
        except OSError:
            allowed.append(False)

    probe = threading.Thread(target=round_trip, name="tuner-idle-probe")
    probe.start()
    probe.join()
    return allowed == [True]


def enter_idle(pid: int) -> None:
    """The session of ``pid`` (a spare's supervisor, just started in a session of its own) at the
    lowest autogroup weight, so that its idle import yields to other sessions as well as within
    its own. Best effort: nothing where the kernel has no autogroups."""
    _set_group_nice(pid, _IDLE_GROUP_NICE)


def leave_idle(pid: int) -> None:
    """Every thread of ``pid``'s descendants (a spare's worker, under its supervisor) back in
    the normal scheduling class, before the spare is handed its request. Done from here, not left
    to the spare: an import still running is in the idle class, and a thread of the spare that
    would move it needs the interpreter's lock, which the import holds through long C calls
    (TensorFlow's extension loading) — on cores that other processes keep busy, an idle thread
    gets almost no CPU time to get through them. Best effort: the spare moves its threads again
    once it reads the request. Nothing where the idle class is not used (:func:`idle_allowed`)."""
    if not idle_allowed():
        return
    _set_group_nice(pid, 0)
    for process in _descendants(pid):
        for task in _listdir(f"/proc/{process}/task"):
            with contextlib.suppress(OSError):  # gone meanwhile
                os.sched_setscheduler(int(task), os.SCHED_OTHER, os.sched_param(0))


_IDLE_GROUP_NICE = 19
_GROUP_TRIES = 5
_GROUP_RETRY_S = 0.11
"""Linux lets a user without CAP_SYS_ADMIN change one autogroup's nice per 100 ms, system-wide
(EAGAIN otherwise)."""


def _set_group_nice(pid: int, nice: int) -> None:
    for _ in range(_GROUP_TRIES):
        try:
            with open(f"/proc/{pid}/autogroup", "w") as group:
                group.write(str(nice))
            return
        except BlockingIOError:
            time.sleep(_GROUP_RETRY_S)
        except OSError:  # no autogroups in this kernel, or the process ended
            return


def _descendants(pid: int) -> list[int]:
    """The pids below ``pid`` (Linux's ``/proc/PID/task/TID/children``), parents first."""
    found: list[int] = []
    frontier = [pid]
    while frontier:
        below: list[int] = []
        for parent in frontier:
            for task in _listdir(f"/proc/{parent}/task"):
                with (
                    contextlib.suppress(OSError),
                    open(f"/proc/{parent}/task/{task}/children") as f,
                ):
                    below.extend(int(child) for child in f.read().split())
        found.extend(below)
        frontier = below
    return found


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:  # the process ended meanwhile
        return []


class Spare(Protocol):
    """A started child waiting for its request."""

    def alive(self) -> bool:
        """Whether it still waits (it has not exited)."""
        ...

    def discard(self) -> None:
        """Kill it and remove its trial folder."""
        ...


class Pool:
    """At most one spare child, keyed by what it was started for."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spare: tuple[Hashable, Spare] | None = None
        self._generation = 0
        self._expected: dict[str, str] | None = None
        self._users = 0
        self._last = False

    def take(self, key: Hashable) -> Spare | None:
        """The spare started for ``key``, now the caller's; ``None`` when there is none alive for
        it (another key's spare is killed: the environment changed)."""
        with self._lock:
            found, self._spare = self._spare, None
        if found is None:
            return None
        spare_key, spare = found
        if spare_key == key and spare.alive():
            return spare
        spare.discard()
        return None

    def spare(self) -> Spare | None:
        """The spare waiting now, if any (it stays the pool's)."""
        with self._lock:
            return self._spare[1] if self._spare is not None else None

    def start(self, key: Hashable, spawn: Callable[[], Spare]) -> None:
        """Start a spare for ``key`` (``spawn``, in the calling thread), unless one is there or no
        search holds the pool (:func:`spares`: a lone run, a validation, a library call would
        leave a spare no one ends); a spare that cannot start (``OSError``) leaves a cold start
        to the next run, which then reports the error itself."""
        if not self.in_use():
            return
        with contextlib.suppress(OSError):
            self._serve_one(self._generation, key, spawn)

    def in_use(self) -> bool:
        """Whether a search (or probe) holds the pool now: only then are spares started."""
        with self._lock:
            return self._users > 0

    def hold(self, held: bool) -> None:
        """A search starts (``True``) or ends (``False``) its use of the pool."""
        with self._lock:
            self._users += 1 if held else -1

    def expect(self, env: Mapping[str, str] | None) -> None:
        """Say which environment the run after the next child needs (``None``: its own)."""
        with self._lock:
            self._expected = dict(env) if env is not None else None

    def last_run(self, last: bool) -> None:
        """Say whether the run about to start is the search's last as far as it knows (no grid
        point left to claim, no seed or racing run to come): its spare is then not started."""
        with self._lock:
            self._last = last

    def wants_next(self) -> bool:
        """Whether a spare for the run after the current one may be of use."""
        with self._lock:
            return not self._last

    def expected(self) -> dict[str, str] | None:
        """The environment :meth:`expect` named, once: the next spare consumes it."""
        with self._lock:
            env, self._expected = self._expected, None
        return env

    def release(self) -> None:
        """Kill the spare, if any; an order given before (another thread's) starts nothing."""
        with self._lock:
            self._generation += 1
            self._expected = None
            self._last = False
            found, self._spare = self._spare, None
        if found is not None:
            found[1].discard()

    def _serve_one(self, generation: int, key: Hashable, spawn: Callable[[], Spare]) -> None:
        # Spawning holds the lock (milliseconds: the interpreter starts on its own), so a
        # request that comes meanwhile takes the new spare rather than starting a second child.
        with self._lock:
            if generation != self._generation:
                return
            old = self._spare
            if old is not None and old[0] == key and old[1].alive():
                return
            self._spare = (key, spawn())
        if old is not None:
            old[1].discard()


POOL = Pool()


@contextlib.contextmanager
def spares(expect: Mapping[str, str] | None = None) -> Iterator[None]:
    """A search's (or probe's) use of warm children: ``expect`` is the environment of the first
    run after the workload check; the spare is killed when the block ends, however it ends."""
    POOL.hold(True)
    POOL.expect(expect)
    try:
        yield
    finally:
        POOL.hold(False)
        POOL.release()


def release() -> None:
    """Kill the spare child, if any (the study ended, or the process exits)."""
    POOL.release()


def last_run(last: bool) -> None:
    """:meth:`Pool.last_run`: whether the next run is the search's last (no spare after it)."""
    POOL.last_run(last)


atexit.register(release)
