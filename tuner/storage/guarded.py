"""The one retry of a search's storage calls (:func:`storage_call`), and the heartbeat as tuner's
own step: a thread per running trial (:func:`beating`). An outage is waited out for ``wait_s``;
past it, or at once for a fault, :class:`StorageFaultError`, and every later call fails the same
way at once (what the user sees: docs/guide/reliability.md).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from tuner.core.options import named
from tuner.storage import spool
from tuner.storage.faults import (
    Fault,
    StorageFaultError,
    back_line,
    classify,
    file_identity,
    file_problem,
    waiting_line,
)
from tuner.storage.places import Place

_log = logging.getLogger("tuner.storage")
_MAX_DELAY_S = 10.0
_T = TypeVar("_T")
# Each guarded storage's guard, and each study opened on one (by the object itself).
_GUARDS: weakref.WeakKeyDictionary[object, Guard] = weakref.WeakKeyDictionary()


class Guard:
    """One guarded storage's state: the outage waited out, the fault, the heartbeat's."""

    def __init__(
        self, place: Place, wait_s: float, *, interval_s: float = 0.0, grace_s: float = 0.0
    ) -> None:
        self.place = place
        self.wait_s = wait_s
        self.interval_s = interval_s  # between heartbeats (0: none, as on Optuna's journal)
        self.grace_s = grace_s  # without a heartbeat, after which another worker takes over
        self.notify: Callable[[str], None] = _log.warning
        self.heartbeat_lost = False
        self.spool_failing = False  # the spool failed to keep a result (said once)
        self.identity = file_identity(place.path) if place.path is not None else None
        self._local = threading.local()
        self._lock = threading.Lock()
        self._broken: str | None = None
        self._outage_since: float | None = None
        self._beat_failing_since: float | None = None
        self._served_at: float | None = None  # the server's last statement (None: no engine)
        self._record: Callable[[], Callable[[int], None] | None] = lambda: None
        self.storage: Callable[[], Any] = lambda: None  # None once gone

    def opened(self, storage: object) -> None:
        """``storage`` is open (its file made, if it was new): guard it from now on."""
        if self.identity is None and self.place.path is not None:
            self.identity = file_identity(self.place.path)
        _GUARDS[storage] = self
        self.storage = weakref.ref(storage)
        engine = getattr(storage, "engine", None)
        if engine is not None:
            # Optuna answers some calls from its cache (finished trials): only a statement the
            # server ran says that it is back, not a call that succeeded without it.
            from sqlalchemy import event

            self._served_at = time.monotonic()
            event.listen(engine, "after_cursor_execute", self._served)
        if self.interval_s and hasattr(storage, "record_heartbeat"):
            # weakly: the registry holds the guard as long as the storage lives, no longer
            self._record = weakref.WeakMethod(storage.record_heartbeat)

    def _served(self, *_: Any) -> None:
        self._served_at = time.monotonic()

    @property
    def spool_folder(self) -> Path:
        """Where this storage's unrecorded results wait (:mod:`tuner.storage.spool`)."""
        return spool.spool_folder(self.place)

    def call(self, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """``fn(*args, **kwargs)`` with outages waited out; a call made inside another (a
        step that reads and writes) is left to the outermost one, which retries the whole."""
        if getattr(self._local, "depth", 0):
            return fn(*args, **kwargs)
        delay = 0.5
        while True:
            self._check()
            self._local.depth = 1
            try:
                result = fn(*args, **kwargs)
            except storage_errors() as exc:
                fault = classify(exc, self.place, self.identity)
                if not fault.outage:
                    raise self.give_up(fault.reason) from exc
                waited = self._waiting(fault)
                if waited >= self.wait_s:
                    raise self.give_up(
                        f"{fault.reason}, still after waiting {waited:.0f} s "
                        f"({named('storage_wait')})"
                    ) from exc
                time.sleep(min(delay, self.wait_s - waited))
                delay = min(2 * delay, _MAX_DELAY_S)
                continue
            finally:
                self._local.depth = 0
            self._back()
            return result

    def _check(self) -> None:
        if self._broken is not None:
            raise StorageFaultError(self._broken)
        gone = file_problem(self.place, self.identity)
        if gone is not None:
            raise self.give_up(gone)

    def give_up(self, reason: str) -> StorageFaultError:
        """The one line that ends the search; later calls fail with it at once."""
        if self._broken is None:
            self._broken = (
                f"storage {self.place.shown} failed: {reason}; {what_to_do(self.place, reason)}"
            )
        return StorageFaultError(self._broken)

    def _waiting(self, fault: Fault) -> float:
        """Seconds this outage has lasted; its first line when it starts."""
        now = time.monotonic()
        with self._lock:
            if self._outage_since is None:
                self._outage_since = now
                self.notify(waiting_line(self.place, fault.reason, self.wait_s, trial_running=True))
            return now - self._outage_since

    def _back(self) -> None:
        with self._lock:
            if self._outage_since is None:
                return
            if self._served_at is not None and self._served_at < self._outage_since:
                return  # answered from Optuna's cache: the server may still be down
            lasted = time.monotonic() - self._outage_since
            self._outage_since = None
            self.heartbeat_lost = False  # the storage takes writes: a new trial beats afresh
        self.notify(back_line(self.place, lasted))

    def beat_now(self, trial_id: int) -> None:
        """One heartbeat of ``trial_id`` that must be stored, as any write: the first, before the
        trial's configuration (which holds ``heartbeat_s``), so that a RUNNING trial without
        ``heartbeat_s`` never beat, which is how the unborn check finds it."""
        record = self._record()
        if record is None:
            return
        self.call(record, trial_id)

    def beat(self, trial_id: int) -> None:
        """One heartbeat of ``trial_id``; never raises (the thread would die): a failure is said
        once and tried again at the next interval."""
        record = self._record()
        if self._broken is not None or record is None:
            return
        try:
            gone = file_problem(self.place, self.identity)
            if gone is None:
                record(trial_id)
                self._beat_ok()
                return
            fault = Fault(False, gone)
        except storage_errors() as exc:
            fault = classify(exc, self.place, self.identity)
        except Exception as exc:  # the thread must live: said once below
            fault = Fault(False, f"{type(exc).__name__}: {exc}")
        self._beat_failed(trial_id, fault)

    def _beat_ok(self) -> None:
        if self._beat_failing_since is None:
            return
        self._beat_failing_since = None
        if self.heartbeat_lost:
            self.heartbeat_lost = False
            self.notify(f"storage {self.place.shown}: the heartbeat is written again")
        self._back()

    def _beat_failed(self, trial_id: int, fault: Fault) -> None:
        now = time.monotonic()
        if self._beat_failing_since is None:
            self._beat_failing_since = now
            if fault.outage:
                self._waiting(fault)
            else:
                self.notify(
                    f"storage {self.place.shown}: the heartbeat of trial id {trial_id} could "
                    f"not be written: {fault.reason}; trying again at each interval"
                )
            return
        if self._outage_since is None:
            return  # a fault, said once: the worker stops at its next write
        grace = self.grace_s
        if grace and now - self._beat_failing_since > grace and not self.heartbeat_lost:
            self.heartbeat_lost = True
            self.notify(
                f"storage {self.place.shown}: no heartbeat written for over {grace:.0f} s (the "
                "grace period), so another worker may take this trial over; this worker "
                "claims no new trial until the heartbeat is written again"
            )


def attach(study: object, storage: object) -> Guard | None:
    """Guard ``study`` as its ``storage`` is; the guard, if any."""
    guard = _GUARDS.get(storage)
    if guard is not None:
        _GUARDS[study] = guard
    return guard


def guard_of(study: object) -> Guard | None:
    """The guard of ``study`` (or of an opened storage); ``None`` when unguarded."""
    return _GUARDS.get(study)


def storage_call(study: object, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """``fn(*args, **kwargs)``, a storage call (or a step of several) of ``study``'s, with its
    guard's retry, if any. A step is retried whole, so it must be safe to run again;
    ``study.ask`` is not quite: if the connection breaks after the trial was stored, the retry
    claims another, and the first stays RUNNING until the unborn check fails it (nothing
    measured is lost)."""
    guard = guard_of(study)
    if guard is None:
        return fn(*args, **kwargs)
    return guard.call(fn, *args, **kwargs)


@contextlib.contextmanager
def beating(study: object, trial_id: int) -> Iterator[None]:
    """Write ``trial_id``'s heartbeat now and at every interval until the block ends."""
    guard = guard_of(study)
    if guard is None or not guard.interval_s:
        yield
        return
    stop = threading.Event()
    # The first before the trial goes on, stored (or the search stops): no window without
    # one, and the configuration the objective writes next says the trial has beaten.
    guard.beat_now(trial_id)

    def beat() -> None:
        while not stop.wait(guard.interval_s):
            guard.beat(trial_id)

    # In the caller's context: its lines name options as its front end does (search.storage_wait).
    context = contextvars.copy_context()
    thread = threading.Thread(
        target=context.run, args=(beat,), name=f"tuner-heartbeat-{trial_id}", daemon=True
    )
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def storage_errors() -> tuple[type[BaseException], ...]:
    """What a storage raises when it fails (the driver's, SQLAlchemy's, Optuna's, the OS's)."""
    import optuna
    import sqlalchemy.exc

    return (sqlalchemy.exc.SQLAlchemyError, optuna.exceptions.StorageInternalError, OSError)


def what_to_do(
    place: Place, reason: str, then: str = "run the same search", *, flag: bool = True
) -> str:
    """What to do about a storage that failed for ``reason``; ``flag``: say ``--storage-wait``."""
    if "disk is full" in reason:
        return f"free some space there, then {then}"
    if "database is locked" in reason:
        raise_it = f" or raise {named('storage_wait')}" if flag else ""
        return (
            f"end the process that holds it locked (`fuser {place.path}` names it){raise_it}, "
            f"then {then}"
        )
    if "cannot be reached" in reason:
        raise_it = f" (or raise {named('storage_wait')})" if flag else ""
        return f"start the database server{raise_it}, then {then}"
    if "permission to write it was lost" in reason:
        return f"give it write access back (or pass another {named('storage')}), then {then}"
    if place.kind in ("sqlite", "journal"):
        what = "journal file" if place.kind == "journal" else "database file"
        return f"put the {what} back (or pass another {named('storage')}), then {then}"
    return f"repair the database (or pass another {named('storage')}), then {then}"
