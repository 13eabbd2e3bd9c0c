"""The warm child: the next run's process, started while the current one finishes, so that its
import falls outside the next trial's wall (its life: docs/design/architecture.md, "A child's
life, and the warm child"). Spares are started from the thread that runs the children, never
from a helper thread: the supervisor's parent-death signal follows the thread that started it,
and a spare started from a helper thread once trained 2-4x slower (cause not found).
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
    """Which uses of a warm child ``TUNER_WARM_CHILD`` allows: unset or ``1`` both, ``0`` neither,
    ``trials`` (the next run's spare) or ``check`` (beside the workload check) one; any other
    value (``late`` included, a timing issue 43 removed) counts as ``1``."""
    value = switch(WARM_ENV)
    if value is None:
        return frozenset()
    if value in (TRIALS, CHECK):
        return frozenset({value})
    return frozenset({TRIALS, CHECK})


class Spare(Protocol):
    """A started child waiting for its request: ``alive`` while it waits; ``discard`` kills it
    and removes its trial folder."""

    def alive(self) -> bool: ...

    def discard(self) -> None: ...


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
        if found is not None and found[0] == key and found[1].alive():
            return found[1]
        if found is not None:
            found[1].discard()
        return None

    def spare(self) -> Spare | None:
        """The spare waiting now, if any (it stays the pool's)."""
        with self._lock:
            return self._spare[1] if self._spare is not None else None

    def start(self, key: Hashable, spawn: Callable[[], Spare]) -> None:
        """Start a spare for ``key`` (``spawn``, in the calling thread), unless one is there or no
        search holds the pool (:func:`spares`: else no one would end it); one that cannot start
        (``OSError``) leaves a cold start to the next run, which then reports the error."""
        with contextlib.suppress(OSError):
            self._serve_one(self._generation, key, spawn)

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
        point, seed or racing run to come): no spare is started after it."""
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
            if generation != self._generation or not self._users:
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


release = POOL.release
"""Kill the spare child, if any (the study ended, or the process exits)."""
last_run = POOL.last_run
"""Whether the next run is the search's last (no spare after it)."""

atexit.register(release)
