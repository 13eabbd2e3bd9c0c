"""One function turns a storage URL into an Optuna storage; no SQL of our own beyond looking:
every write goes through Optuna's public storage API. Reading never writes: a storage is opened
for reading only once :mod:`tuner.storage.schema` has seen Optuna's schema there.

Opening a storage that is out of reach waits for it as a search waits mid-way
(:mod:`tuner.storage.guarded`), with the same two lines. Only an outage is waited for; bad input
is exit 2 at once, and past the bound :class:`StorageFaultError` is exit 1.
"""

from __future__ import annotations

import logging
import math
import random
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from tuner.core.errors import ConfigError
from tuner.core.options import DEFAULT_HEARTBEAT_S as DEFAULT_HEARTBEAT_S
from tuner.core.options import DEFAULT_STORAGE as DEFAULT_STORAGE
from tuner.core.options import DEFAULT_STORAGE_WAIT_S as DEFAULT_STORAGE_WAIT_S
from tuner.core.options import named
from tuner.storage.faults import StorageFaultError, back_line, classify_opening, waiting_line
from tuner.storage.guarded import Guard, what_to_do
from tuner.storage.places import Place, describe, folder_problem, locate, read_only_reason
from tuner.storage.places import mask_password as mask_password
from tuner.storage.schema import check_journal_file, check_storage_file, has_optuna_schema

SQLITE_TIMEOUT_S = 60
_OPEN_ATTEMPTS = 5
describe_storage_error = describe
READING_WAIT_S = 30.0
"""The reading commands' default wait: time for a server to restart, not much longer."""
_MAX_DELAY_S = 5.0
_log = logging.getLogger("tuner.storage")
T = TypeVar("T")


def check_storage(url: str, *, create: bool, wait_s: float | None = None) -> None:
    """Raise :class:`ConfigError` unless ``url`` can take a study (``create``) or holds Optuna's
    schema (reading); writes and creates nothing. An outage is waited for as
    :func:`reached` says; a refusal waiting cannot mend is at once."""
    place = locate(url)
    reached(place, wait_s, lambda: _check_schema(place, create), searching=create)


def _check_schema(place: Place, create: bool) -> None:
    if _checked(place, create):  # a stored schema: is it this Optuna's? (asking writes nothing)
        _sql_storage(place, {}, stamped=True).engine.dispose()


def open_storage(
    url: str, *, create: bool, heartbeat_s: float | None = None, wait_s: float | None = None
) -> Any:
    """An Optuna storage for ``url``, after :func:`check_storage`.

    Reading creates, stamps and migrates nothing; ``create`` makes the folder and schema when
    missing. ``heartbeat_s`` turns on Optuna's heartbeat (RDB only; grace 3 × interval). A
    search's storage (``create``) has a guard (:mod:`tuner.storage.guarded`) that waits
    ``wait_s`` at every later call; a reading command's has none.
    """
    place = locate(url)
    heartbeat = {} if place.kind == "journal" else _heartbeat(heartbeat_s)
    if place.kind == "journal":
        _checked(place, create)
        storage = _journal(place, create)
    else:
        storage = reached(place, wait_s, lambda: _sql(place, create, heartbeat), searching=create)
    if create and wait_s is not None:
        interval = float(heartbeat.get("heartbeat_interval", 0))
        grace = float(heartbeat.get("grace_period", 0))
        Guard(place, wait_s, interval_s=interval, grace_s=grace).opened(storage)
    return storage


def storage_read_only(url: str) -> str | None:
    """Why ``url`` cannot be written to, or ``None`` when it looks writable."""
    return read_only_reason(locate(url))


def _checked(place: Place, create: bool) -> bool:
    """:func:`check_storage` on a parsed URL; whether an RDB storage holds Optuna's schema."""
    if place.in_memory:
        raise _in_memory(place, create)
    if place.kind == "journal":
        check_journal_file(place, create=create)
    elif place.kind == "sqlite":
        check_storage_file(place, create=create)
    if create and (reason := read_only_reason(place)):
        raise ConfigError(
            f"storage {place.shown} is read-only ({reason}), and a search stores every trial "
            f"there; give a storage it may write, e.g. {named('storage')} {DEFAULT_STORAGE}"
        )
    if place.kind == "journal" or (place.path is not None and not place.path.exists()):
        return False
    return has_optuna_schema(place, create=create, timeout_s=_lock_timeout(place))


def _lock_timeout(place: Place) -> float:
    """Seconds one SQLite statement waits for another's lock (past it, the guard waits)."""
    return SQLITE_TIMEOUT_S if place.lock_timeout_s is None else place.lock_timeout_s


def _in_memory(place: Place, create: bool) -> ConfigError:
    if create:
        return ConfigError(
            f"{named('storage')} {place.shown} is in memory, but a study's results must outlive "
            "the process; use a file, e.g. sqlite:///studies/tuner.db or journal:studies/tuner.log"
        )
    return ConfigError(
        f"{named('storage')} {place.shown} is in memory, so it holds no study (nothing there "
        f"outlives the process that made it); point {named('storage')} at a file, e.g. "
        "sqlite:///studies/tuner.db"
    )


def _heartbeat(heartbeat_s: float | None) -> dict[str, Any]:
    """``RDBStorage``'s heartbeat arguments; stale trials retried once per failure."""
    if heartbeat_s is None:
        return {}
    import optuna

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return {
            "heartbeat_interval": max(1, round(heartbeat_s)),
            "grace_period": max(3, round(3 * heartbeat_s)),
            **_retry_callback(optuna),
        }


def _sql(place: Place, create: bool, heartbeat: dict[str, Any]) -> Any:
    """``RDBStorage`` once checked, retried while other workers create the same schema."""
    for attempt in range(_OPEN_ATTEMPTS):
        stamped = _checked(place, create)
        if create and place.path is not None:
            _make_parent(place.path)
        try:
            return _sql_storage(place, heartbeat, stamped=stamped)
        except _SchemaRace as race:
            if attempt + 1 == _OPEN_ATTEMPTS:
                raise ConfigError(
                    f"cannot open storage {place.shown}: {describe(race, place)}"
                ) from race
            # Workers creating one fresh database race on its schema (SQLite's version row,
            # PostgreSQL's enum types and tables); the loser finds it in place on the next try.
            time.sleep(0.2 + random.random())
    raise AssertionError("unreachable")


class _SchemaRace(Exception):
    """Another process was creating the same schema: try again."""


def _sql_storage(place: Place, heartbeat: dict[str, Any], *, stamped: bool) -> Any:
    """``RDBStorage`` on ``place``; ``stamped``: no table created, no version written."""
    import optuna
    import sqlalchemy.exc

    Storage: Any = optuna.storages.RDBStorage
    engine_kwargs: dict[str, Any] = {}
    if place.kind == "sqlite":
        engine_kwargs["connect_args"] = {"timeout": _lock_timeout(place)}
    else:  # a pooled connection to a server that restarted is dead: test it before reuse
        engine_kwargs["pool_pre_ping"] = True
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return Storage(
                place.url, engine_kwargs=engine_kwargs, skip_table_creation=stamped, **heartbeat
            )
    except (
        sqlalchemy.exc.SQLAlchemyError,
        # Optuna's commits (the version row) wrap the driver's error: a server shutting down
        # while it is written is an outage like any other (the classifier reads the chain).
        optuna.exceptions.StorageInternalError,
        ValueError,
        RuntimeError,
        ImportError,
    ) as exc:
        if _is_schema_race(exc):
            raise _SchemaRace() from exc
        if isinstance(exc, RuntimeError) and "no longer compatible" in str(exc):
            raise ConfigError(
                f"storage {place.shown} holds the schema of another Optuna version, and tuner "
                f"upgrades no schema: {describe(exc, place)} (back the storage up first)"
            ) from exc
        raise ConfigError(f"cannot open storage {place.shown}: {describe(exc, place)}") from exc


def _is_schema_race(exc: BaseException) -> bool:
    import sqlalchemy.exc

    if not isinstance(exc, sqlalchemy.exc.SQLAlchemyError) and exc.__cause__ is not None:
        exc = exc.__cause__  # Optuna's StorageInternalError around the driver's error

    if isinstance(exc, sqlalchemy.exc.IntegrityError):
        return True
    # PostgreSQL reports a table or type created meanwhile as a ProgrammingError, SQLite as an
    # OperationalError ("table alembic_version already exists").
    races = (sqlalchemy.exc.ProgrammingError, sqlalchemy.exc.OperationalError)
    return isinstance(exc, races) and "already exists" in str(exc)


def _retry_callback(optuna: Any) -> dict[str, Any]:
    """Optuna's callback that re-queues a dead worker's trial (renamed in Optuna 4.9)."""
    if hasattr(optuna.storages, "RetryHeartbeatStaleTrialCallback"):
        callback = optuna.storages.RetryHeartbeatStaleTrialCallback(max_retry=3)
        return {"heartbeat_stale_trial_callback": callback}
    return {"failed_trial_callback": optuna.storages.RetryFailedTrialCallback(max_retry=3)}


def _journal(place: Place, create: bool) -> Any:
    """Optuna's journal on ``place``'s file (made only when ``create``)."""
    import optuna
    from optuna.storages.journal import JournalFileBackend

    assert place.path is not None
    if create:
        _make_parent(place.path)
    try:
        return optuna.storages.JournalStorage(JournalFileBackend(str(place.path)))
    except Exception as exc:  # any failure to replay the log means it is not a journal
        raise ConfigError(
            f"cannot open journal storage {place.path}: {type(exc).__name__}: {exc}"
        ) from exc


def _make_parent(path: Path) -> None:
    problem = folder_problem(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"cannot create the folder of storage file {path}: {problem or exc}"
        ) from exc


def reached(place: Place, wait_s: float | None, attempt: Callable[[], T], *, searching: bool) -> T:
    """``attempt()``, tried again while its :class:`ConfigError` comes from an outage, for
    ``wait_s`` seconds (``None``: :data:`READING_WAIT_S`; a bad one refused first).
    ``searching``: the command is a search (what to do next is to run it again)."""
    flag = wait_s is not None
    if wait_s is not None and not (math.isfinite(wait_s) and wait_s >= 0):
        raise ConfigError(
            f"{named('storage_wait')} must be 0 or a positive number of seconds, got {wait_s}"
        )
    bound = READING_WAIT_S if wait_s is None else wait_s
    since: float | None = None
    delay = 0.5
    while True:
        try:
            result = attempt()
        except ConfigError as exc:
            cause = exc.__cause__
            if cause is None:  # said by tuner itself: bad input, not an outage
                raise
            fault = classify_opening(cause, place)
            if not fault.outage:
                raise
            now = time.monotonic()
            if since is None:
                since = now
                line = waiting_line(place, fault.reason, bound, trial_running=False, flag=flag)
                _log.warning(line)
            waited = now - since
            if waited >= bound:
                raise _gave_up(place, fault.reason, waited, searching, flag) from exc
            time.sleep(min(delay, bound - waited))
            delay = min(2 * delay, _MAX_DELAY_S)
            continue
        if since is not None:
            _log.warning(back_line(place, time.monotonic() - since))
        return result


def _gave_up(
    place: Place, reason: str, waited: float, searching: bool, flag: bool
) -> StorageFaultError:
    then = "run the same search" if searching else "run the command again"
    todo = what_to_do(place, reason, then=then, flag=flag)
    bound = f" ({named('storage_wait')})" if flag else ""
    return StorageFaultError(
        f"storage {place.shown} cannot be opened: {reason}, still after waiting "
        f"{waited:.0f} s{bound}; {todo}"
    )
