"""One function turns a storage URL into an Optuna storage; no SQL of our own.

``sqlite:///path.db`` and any SQLAlchemy URL go to ``RDBStorage`` (SQLite with a generous lock
timeout, so several workers can share one file), with Optuna's heartbeat when asked: a trial whose
worker died stops heartbeating, is failed, and is re-queued by ``RetryFailedTrialCallback``.
``journal:PATH`` is Optuna's journal file (``JournalStorage``), which Optuna recommends for several
processes on one host; it has no heartbeat. Connection errors become one clear line with the
password masked.
"""

from __future__ import annotations

import json
import random
import re
import time
import warnings
from pathlib import Path
from typing import Any

from tuner.core.errors import ConfigError

DEFAULT_STORAGE = "sqlite:///studies/tuner.db"
SQLITE_TIMEOUT_S = 60
DEFAULT_HEARTBEAT_S = 20.0
"""Seconds between a worker's heartbeats; a trial silent for longer is re-run by another."""
_OPEN_ATTEMPTS = 5

_KNOWN_SCHEMES = ("sqlite", "postgresql", "mysql", "oracle", "mssql")


def mask_password(url: str) -> str:
    """``postgresql://user:secret@host/db`` -> ``postgresql://user:***@host/db``."""
    return re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", url)


def sqlite_path(url: str) -> Path | None:
    """The file of a ``sqlite:///`` URL, or ``None`` for other URLs and in-memory SQLite."""
    if not url.startswith("sqlite:///"):
        return None
    path = url[len("sqlite:///") :].split("?")[0]
    return None if path in ("", ":memory:") else Path(path)


def open_storage(url: str, *, create: bool, heartbeat_s: float | None = None) -> Any:
    """Return an Optuna storage for ``url``.

    With ``create=False`` the database file must already exist (reading never creates one).
    ``heartbeat_s`` turns on Optuna's heartbeat (RDB storages only; grace period 3 × interval)
    with stale trials retried once per failure. Raises :class:`ConfigError` for an unknown scheme,
    a missing or unreadable database, or a server that refuses the connection.
    """
    scheme = url.split(":", 1)[0].split("+", 1)[0].lower() if ":" in url else ""
    if scheme == "journal":
        return _journal(url, create)
    if scheme not in _KNOWN_SCHEMES:
        raise ConfigError(
            f"--storage {mask_password(url)!r} has an unknown scheme; use e.g. "
            "sqlite:///studies/tuner.db, journal:studies/tuner.log or "
            "postgresql+psycopg://user:pass@host/db"
        )
    engine_kwargs: dict[str, Any] = {}
    if scheme == "sqlite":
        _check_sqlite_file(sqlite_path(url), create)
        engine_kwargs["connect_args"] = {"timeout": SQLITE_TIMEOUT_S}
    return _rdb(url, engine_kwargs, _heartbeat(heartbeat_s))


def _check_sqlite_file(path: Path | None, create: bool) -> None:
    """The file must exist to read it, and its folder is made to create it."""
    if path is None:
        return
    if not path.exists() and not create:
        raise ConfigError(f"storage file {path} does not exist")
    if path.exists() and not path.is_file():
        raise ConfigError(f"storage path {path} is not a file")
    if create:
        _make_parent(path)


def _heartbeat(heartbeat_s: float | None) -> dict[str, Any]:
    """``RDBStorage``'s heartbeat arguments (none without ``heartbeat_s``)."""
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


def _rdb(url: str, engine_kwargs: dict[str, Any], heartbeat: dict[str, Any]) -> Any:
    """``RDBStorage(url)``, retried while other workers create the same schema."""
    import optuna
    import sqlalchemy.exc

    for attempt in range(_OPEN_ATTEMPTS):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                return optuna.storages.RDBStorage(url, engine_kwargs=engine_kwargs, **heartbeat)
        except (sqlalchemy.exc.SQLAlchemyError, ValueError, RuntimeError, ImportError) as exc:
            if _is_schema_race(exc) and attempt + 1 < _OPEN_ATTEMPTS:
                # Several workers creating the same fresh database race on its schema (the
                # version row in SQLite, the enum types and tables in PostgreSQL); the loser
                # finds the schema in place on the next try.
                time.sleep(0.2 + random.random())
                continue
            reason = " ".join(str(getattr(exc, "orig", None) or exc).split())[:300]
            raise ConfigError(
                f"cannot open storage {mask_password(url)}: {mask_password(reason)}"
            ) from exc
    raise AssertionError("unreachable")


def _is_schema_race(exc: BaseException) -> bool:
    """Whether opening failed because another process was creating the same schema."""
    import sqlalchemy.exc

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


def _journal(url: str, create: bool) -> Any:
    import optuna
    from optuna.storages.journal import JournalFileBackend

    path = Path(url.split(":", 1)[1].removeprefix("//"))
    if not str(path) or str(path) == ".":
        raise ConfigError(
            "--storage journal:PATH needs a file path, e.g. journal:studies/tuner.log"
        )
    if not path.exists() and not create:
        raise ConfigError(f"storage file {path} does not exist")
    if path.exists() and not path.is_file():
        raise ConfigError(f"storage path {path} is not a file")
    if path.exists() and not _looks_like_journal(path):
        raise ConfigError(f"cannot open journal storage {path}: it is not an Optuna journal file")
    if create:
        _make_parent(path)
    try:
        return optuna.storages.JournalStorage(JournalFileBackend(str(path)))
    except Exception as exc:  # any failure to replay the log means it is not a journal
        raise ConfigError(
            f"cannot open journal storage {path}: {type(exc).__name__}: {exc}"
        ) from exc


def _looks_like_journal(path: Path) -> bool:
    """An empty file, or one whose first line is a JSON journal record (``op_code``)."""
    with path.open("rb") as handle:
        first = handle.readline()
    if not first.strip():
        return True
    try:
        record = json.loads(first)
    except ValueError:
        return False
    return isinstance(record, dict) and "op_code" in record


def _make_parent(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the folder of storage file {path}: {exc}") from exc
