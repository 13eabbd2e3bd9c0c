"""A storage that waits out outages and names its faults: every call Optuna makes on its
RDB storage (or Optuna's journal storage) goes through :meth:`GuardedStorage._call`, and the
heartbeat thread through :meth:`GuardedStorage.record_heartbeat`.

* An outage (:func:`tuner.storage.faults.classify`) is retried with backoff for ``wait_s``
  seconds (``--storage-wait``), with one line when the waiting starts and one when the storage
  is back; the running trial's child goes on meanwhile. Past the bound, or at once for a fault
  that waiting cannot mend, the call raises :class:`StorageFaultError` (one line, exit 1) and
  every later call fails the same way at once: the worker stops, it does not wait twice.
* A SQLite file is checked before each call: deleted or replaced, it is a fault (SQLite would
  otherwise write on into the deleted file, or create an empty one in its place).
* Optuna's heartbeat thread has no exception handling of its own: here a failed beat is tried
  again at the next interval and said once; a heartbeat that cannot be written for longer than
  the grace period sets :attr:`heartbeat_lost`, and the trial loop then claims no new trial
  (another worker may take this one over).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

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

__all__ = ["GUARDED_METHODS", "guarded_class", "guarded_of", "what_to_do"]

_log = logging.getLogger("tuner.storage")
GUARDED_METHODS = (
    "create_new_study", "delete_study", "set_study_user_attr", "set_study_system_attr",
    "get_study_id_from_name", "get_study_name_from_id", "get_study_directions",
    "get_study_user_attrs", "get_study_system_attrs", "get_all_studies", "create_new_trial",
    "set_trial_param", "get_trial_id_from_study_id_trial_number", "set_trial_state_values",
    "set_trial_intermediate_value", "set_trial_user_attr", "set_trial_system_attr", "get_trial",
    "get_all_trials", "get_n_trials", "get_best_trial", "_get_trials", "_get_stale_trial_ids",
    "get_trial_param", "get_trial_params", "get_trial_user_attrs", "get_trial_system_attrs",
    "get_trial_number_from_id", "check_trial_is_updatable",
    # What Optuna's trial cache calls on the storage behind it instead of the public names.
    "_create_new_trial", "_set_trial_param", "_get_best_trial_id",
)  # fmt: skip
"""Optuna's storage API and the private methods its trial cache calls: each is one guarded
call."""
_MAX_DELAY_S = 10.0


class GuardedStorage:
    """The guard's state and behaviour, mixed in before Optuna's ``RDBStorage`` class."""

    place: Place
    wait_s: float
    notify: Callable[[str], None]
    heartbeat_lost: bool
    _identity: tuple[int, int] | None

    def __init__(self, *args: Any, place: Place, wait_s: float, **kwargs: Any) -> None:
        self._guard_init(place, wait_s)
        super().__init__(*args, **kwargs)
        if self._identity is None and place.path is not None:  # a file made just now
            self._identity = file_identity(place.path)

    def _guard_init(self, place: Place, wait_s: float) -> None:
        self.place = place
        self.wait_s = wait_s
        self.notify = _log.warning
        self.heartbeat_lost = False
        self._identity = file_identity(place.path) if place.path is not None else None
        self._local = threading.local()
        self._lock = threading.Lock()
        self._broken: str | None = None
        self._outage_since: float | None = None
        self._beat_failing_since: float | None = None

    # -- calls -----------------------------------------------------------------------------

    def _call(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``method`` with outages waited out; a nested call (one write inside another's
        transaction) is left to the outermost one, which retries the whole."""
        if getattr(self._local, "depth", 0):
            return method(*args, **kwargs)
        delay = 0.5
        while True:
            self._check()
            self._local.depth = 1
            try:
                result = method(*args, **kwargs)
            except _storage_errors() as exc:
                fault = classify(exc, self.place, self._identity)
                if not fault.outage:
                    raise self._give_up(fault.reason) from exc
                waited = self._waiting(fault)
                if waited >= self.wait_s:
                    raise self._give_up(
                        f"{fault.reason}, still after waiting {waited:.0f} s (--storage-wait)"
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
        gone = file_problem(self.place, self._identity)
        if gone is not None:
            raise self._give_up(gone)

    def _give_up(self, reason: str) -> StorageFaultError:
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
            lasted = time.monotonic() - self._outage_since
            self._outage_since = None
            self.heartbeat_lost = False  # the storage takes writes: a new trial beats afresh
        self.notify(back_line(self.place, lasted))

    @property
    def spool_folder(self) -> Path:
        """Where this storage's unrecorded results wait (:mod:`tuner.storage.spool`)."""
        return spool.spool_folder(self.place)

    def _stored(self, trial_id: int, state: Any, values: Any = None) -> None:
        """A trial's final state is stored: its spooled result, if it is the one stored, is no
        longer needed (another worker failing the trial as stale stores no result of it)."""
        if state.is_finished():
            spool.discard(self.spool_folder, trial_id, state.name, values)

    # -- heartbeat -------------------------------------------------------------------------

    def beat_now(self, trial_id: int) -> None:
        """One beat that must be stored, as any write: an outage waited out, a fault raised (a
        trial's configuration, which says it has beaten, is written only after it)."""
        self._call(super().record_heartbeat, trial_id)  # type: ignore[misc]

    def record_heartbeat(self, trial_id: int) -> None:
        """One beat; never raises (it runs in Optuna's heartbeat thread, which would die with
        a traceback). A failure is said once and tried again at the next interval."""
        if self._broken is not None:
            return
        try:
            if file_problem(self.place, self._identity) is None:
                super().record_heartbeat(trial_id)  # type: ignore[misc]
                self._beat_ok()
                return
            reason = file_problem(self.place, self._identity) or ""
            fault = Fault(False, reason)
        except _storage_errors() as exc:
            fault = classify(exc, self.place, self._identity)
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
        grace = getattr(self, "grace_period", None) or 0
        if self._outage_since is None:
            return  # a fault, said once: the worker stops at its next write
        if grace and now - self._beat_failing_since > grace and not self.heartbeat_lost:
            self.heartbeat_lost = True
            self.notify(
                f"storage {self.place.shown}: no heartbeat written for over {grace} s (the "
                "grace period), so another worker may take this trial over; this worker "
                "claims no new trial until the heartbeat is written again"
            )


def guarded_class(base: type) -> type:
    """``base`` (Optuna's ``RDBStorage`` or ``JournalStorage``) with every call guarded."""
    namespace: dict[str, Any] = {"__module__": __name__}
    for name in GUARDED_METHODS:
        if hasattr(base, name):
            namespace[name] = _guarded_method(name)
    return type(f"Guarded{base.__name__}", (GuardedStorage, base), namespace)


def _guarded_method(name: str) -> Callable[..., Any]:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        inner = getattr(super(GuardedStorage, self), name)
        result = self._call(inner, *args, **kwargs)
        if name == "set_trial_state_values" and result:
            self._stored(*args, **kwargs)
        return result

    method.__name__ = name
    return method


def guarded_of(storage: Any) -> GuardedStorage | None:
    """The guarded storage behind ``storage`` (Optuna wraps it in its trial cache), if any."""
    if isinstance(storage, GuardedStorage):  # a journal (its _backend is its file)
        return storage
    backend = getattr(storage, "_backend", storage)
    return backend if isinstance(backend, GuardedStorage) else None


def _storage_errors() -> tuple[type[BaseException], ...]:
    import optuna
    import sqlalchemy.exc

    return (sqlalchemy.exc.SQLAlchemyError, optuna.exceptions.StorageInternalError, OSError)


def what_to_do(
    place: Place, reason: str, then: str = "run the same search", *, flag: bool = True
) -> str:
    """What the user does about a storage that failed for ``reason``, then ``then``; ``flag``:
    the command has ``--storage-wait`` to raise."""
    if "disk is full" in reason:
        return f"free some space there, then {then}"
    if "database is locked" in reason:
        raise_it = " or raise --storage-wait" if flag else ""
        return (
            f"end the process that holds it locked (`fuser {place.path}` names it){raise_it}, "
            f"then {then}"
        )
    if "cannot be reached" in reason:
        raise_it = " (or raise --storage-wait)" if flag else ""
        return f"start the database server{raise_it}, then {then}"
    if "permission to write it was lost" in reason:
        return f"give it write access back (or pass another --storage), then {then}"
    if place.kind in ("sqlite", "journal"):
        what = "journal file" if place.kind == "journal" else "database file"
        return f"put the {what} back (or pass another --storage), then {then}"
    return f"repair the database (or pass another --storage), then {then}"
