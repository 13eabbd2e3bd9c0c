"""What a storage holds, found without writing to it: an Optuna schema, nothing, or something else.

Optuna's ``RDBStorage`` creates its tables as soon as it is constructed, and ``JournalStorage``
starts a journal in any file, so a storage is first looked at through a connection that cannot
write. A file that is not a study database is refused with one line, byte-for-byte unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tuner.core.errors import ConfigError
from tuner.core.options import DEFAULT_STORAGE, named
from tuner.storage.places import Place, describe, folder_problem, read_only_uri

OPTUNA_TABLES = frozenset({"studies", "trials", "version_info", "alembic_version"})
"""Tables every Optuna RDB schema has (since Optuna 1.x, when alembic arrived)."""
_STAMPS = ("version_info", "alembic_version")
"""Tables whose one row says which schema is stored; Optuna writes them when they are empty."""
_NOT_SQLITE = "file is not a database"
_MALFORMED = "database disk image is malformed"


def not_a_study(place: Place, why: str, *, create: bool = False) -> ConfigError:
    """``<url> is not a tuner/Optuna study database``, with why and what to do."""
    todo = (
        "give a new file or an Optuna storage instead"
        if create
        else f"point {named('storage')} at a storage that `tuner search` wrote"
    )
    return ConfigError(
        f"{place.shown} is not a tuner/Optuna study database ({why}); the database was not "
        f"changed: {todo} (default {DEFAULT_STORAGE})"
    )


def has_optuna_schema(place: Place, *, create: bool, timeout_s: float) -> bool:
    """Whether ``place`` (an RDB storage) holds a complete, stamped Optuna schema; reading raises
    :class:`ConfigError` where it does not, creating only for a foreign file (both for a damaged
    file or a refused connection)."""
    try:
        tables, stamped = _tables(place, timeout_s, create, read_only=place.kind == "sqlite")
    except _HotJournal:
        # A writer died mid-transaction and left its rollback journal, which a read-only
        # connection cannot play back: doing so restores the last committed state, as any reader.
        try:
            tables, stamped = _tables(place, timeout_s, create, read_only=False)
        except _HotJournal as again:  # the URL itself says mode=ro
            raise _cannot_open(place, again.__cause__ or again) from None
    if not stamped and not create:
        raise not_a_study(place, _missing(place, tables))
    if not stamped and place.kind == "sqlite" and tables and not tables & OPTUNA_TABLES:
        raise not_a_study(place, "it holds another application's tables", create=True)
    return stamped


class _HotJournal(Exception):
    """The SQLite file has a hot rollback journal (a read-only connection cannot open it)."""


def _tables(
    place: Place, timeout_s: float, create: bool, *, read_only: bool
) -> tuple[set[str], bool]:
    """The table names, and whether Optuna's schema is there and stamped."""
    import sqlalchemy
    import sqlalchemy.exc

    sqlite = place.kind == "sqlite"
    try:
        engine = _engine(place, timeout_s, read_only)
    # ValueError: a port that is not a number (SQLAlchemy's URL parser lets it through)
    except (sqlalchemy.exc.SQLAlchemyError, ImportError, ValueError) as exc:
        raise _cannot_open(place, exc) from exc
    try:
        with engine.connect() as connection:
            if sqlite:
                _check_intact(place, connection)
            tables = set(sqlalchemy.inspect(connection).get_table_names())
            stamped = tables >= OPTUNA_TABLES and all(_has_row(connection, t) for t in _STAMPS)
    except sqlalchemy.exc.SQLAlchemyError as exc:
        code = getattr(getattr(exc, "orig", None), "sqlite_errorname", "")
        if code == "SQLITE_READONLY_ROLLBACK":
            raise _HotJournal() from exc
        if sqlite and _NOT_SQLITE in str(exc):
            raise not_a_study(place, "not an SQLite database file", create=create) from None
        raise _cannot_open(place, exc) from exc
    finally:
        engine.dispose()
    return tables, stamped


def _engine(place: Place, timeout_s: float, read_only: bool) -> Any:
    """A plain SQLAlchemy engine (no Optuna: nothing is created on connecting)."""
    import sqlite3

    import sqlalchemy

    if read_only:
        # Connected by hand: SQLAlchemy would unquote the URI's %-escapes before SQLite does.
        uri = read_only_uri(place)
        return sqlalchemy.create_engine(
            "sqlite://", creator=lambda: sqlite3.connect(uri, uri=True, timeout=timeout_s)
        )
    connect_args = {"timeout": timeout_s} if place.kind == "sqlite" else {}
    return sqlalchemy.create_engine(place.url, connect_args=connect_args)


def _check_intact(place: Place, connection: Any) -> None:
    """Refuse a damaged SQLite file now (SQLite's check of every page: milliseconds for a
    study), not with Optuna's "exceeding max length" when a page is read mid-search."""
    rows = connection.exec_driver_sql("PRAGMA quick_check").fetchall()
    if [tuple(row) for row in rows] != [("ok",)]:
        raise malformed(place, str(rows[0][0]))


def malformed(place: Place, detail: str = "") -> ConfigError:
    """The one line for a damaged SQLite file."""
    shown = f" ({detail})" if detail and detail != _MALFORMED else ""
    return ConfigError(
        f"storage file {place.path} is damaged: {_MALFORMED}{shown}; restore it from a "
        f"backup (`sqlite3 {place.path} .recover` salvages what is readable)"
    )


def _has_row(connection: Any, table: str) -> bool:
    import sqlalchemy

    one: Any = sqlalchemy.select(sqlalchemy.literal_column("1"))
    return connection.execute(one.select_from(sqlalchemy.table(table)).limit(1)).first() is not None


def _missing(place: Place, tables: set[str]) -> str:
    if place.kind == "sqlite" and place.path is not None and place.path.stat().st_size == 0:
        return "the file is empty"
    if not tables:
        return "it has no tables"
    if tables >= OPTUNA_TABLES:
        return "its Optuna tables hold no schema version"
    return "it has no Optuna tables"


def _cannot_open(place: Place, exc: BaseException) -> ConfigError:
    reason = describe(exc, place)
    if _MALFORMED in reason and place.kind == "sqlite":
        return malformed(place)
    return ConfigError(f"cannot open storage {place.shown}: {reason}")


def check_storage_file(place: Place, *, create: bool) -> bool:
    """Whether the file exists; a missing one needs a folder that can be made."""
    path = place.path
    assert path is not None
    if not path.exists():
        _check_new_file(path, create)
        return False
    if not path.is_file():
        raise ConfigError(f"storage path {path} is not a file")
    return True


def check_journal_file(place: Place, *, create: bool) -> None:
    """An existing journal must be Optuna's, and hold something to be read."""
    if not check_storage_file(place, create=create):
        return
    path = place.path
    assert path is not None
    if not create and path.stat().st_size == 0:
        raise not_a_study(place, "the journal file is empty")
    if path.stat().st_size and not _looks_like_journal(path):
        raise not_a_study(place, "not an Optuna journal file", create=create)


def _check_new_file(path: Path, create: bool) -> None:
    if not create:
        # A relative path is read from the current folder: say which one, since running from
        # another folder is the usual reason the default studies/tuner.db is not found.
        where = "" if path.is_absolute() else f" (looked for {path.absolute()})"
        raise ConfigError(
            f"storage file {path} does not exist{where}; run `tuner search` first, or give "
            f"{named('storage')}"
        )
    problem = folder_problem(path)
    if problem:
        raise ConfigError(f"cannot create the folder of storage file {path}: {problem}")


def _looks_like_journal(path: Path) -> bool:
    """Whether the first line is a JSON journal record (``op_code``)."""
    with path.open("rb") as handle:
        first = handle.readline()
    try:
        record = json.loads(first)
    except ValueError:
        return False
    return isinstance(record, dict) and "op_code" in record
