"""The warm child: the next run's process, started while the current one finishes.

Each child pays an interpreter start and the framework's import (~3 s of TensorFlow on our
machines). A warm child pays it early: the
driver starts it (``python -m tuner.worker --warm BACKEND ...``, :mod:`tuner.worker.warm`) when

- the running child reports its rates measured (``windows_done``, after the last window, its
  noise-scale steps and loss checks, and its input probe): the import then shares the cores with
  the current run's validation pass and hand-back, never with a window or probe whose rate is
  measured;
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
``trials`` only the spare for the next run, ``check`` only the overlap with the workload check;
any other value counts as ``1`` (``late``, which chose the timing above over an import at idle
priority beside the running trial, names the only timing since issue 43 removed that layer: no
measurement on a GPU host showed that it pays).
"""

from __future__ import annotations

import atexit
import contextlib
import threading
from collections.abc import Callable, Hashable, Iterator, Mapping
from typing import Protocol

from tuner.driver.children import _forked
from tuner.driver.children._process import switch

WARM_ENV = "TUNER_WARM_CHILD"
TRIALS = "trials"
CHECK = "check"


def uses() -> frozenset[str]:
    """Which uses of a warm child ``TUNER_WARM_CHILD`` allows (:data:`TRIALS`, :data:`CHECK`)."""
    value = switch(WARM_ENV)
    if value is None:
        return frozenset()
    if value in (TRIALS, CHECK):
        return frozenset({value})
    return frozenset({TRIALS, CHECK})


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
        _forked.close_all(idle_only=True)  # the servers spares were forked from

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
