"""Where a storage URL points: its kind, its file, whether it lives in memory or is read-only.
Nothing here opens, creates or changes a file: every check can run before a search's first child.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from tuner.core.errors import ConfigError
from tuner.core.options import named

_KNOWN_SCHEMES = ("sqlite", "postgresql", "mysql", "oracle", "mssql")
_URI_READ_ONLY = {"mode": "ro", "immutable": "1"}  # SQLite refuses every write under them


def mask_password(url: str) -> str:
    """``url`` with its password hidden wherever SQLAlchemy reads one (else its scheme only)."""
    if "://" not in url:
        return url
    from sqlalchemy.engine import make_url  # not on the way of `tuner --help`
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        return f"{url.split('://', 1)[0]}://***" if "@" in url or "password" in url else url
    host = parsed.host or ""
    secret_query = [key for key in parsed.query if key.lower() == "password"]
    if parsed.password is None and not secret_query and "@" not in host:
        return url
    if "@" in host:  # an unescaped "@" in the password: SQLAlchemy took its rest for the host
        parsed = parsed.set(host=host.rsplit("@", 1)[1], password="***")
    if secret_query:
        parsed = parsed.update_query_dict({key: "***" for key in secret_query})
    return parsed.render_as_string(hide_password=True).replace("%2A%2A%2A", "***")


def _misread_host(url: str) -> str | None:
    """The host SQLAlchemy reads from a ``url`` with an unescaped ``@``, else ``None``."""
    if "@" not in url or "://" not in url:
        return None
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        host = make_url(url).host or ""
    except (ArgumentError, ValueError):
        return None
    return host if "@" in host else None


@dataclass(frozen=True)
class Place:
    """A parsed storage URL."""

    url: str
    kind: str
    """``sqlite``, ``journal``, or another SQLAlchemy backend (``postgresql``, ``mysql``, …)."""
    path: Path | None = None
    """The file of a SQLite or journal storage (``None``: in memory, or a server)."""
    in_memory: bool = False
    uri_options: dict[str, str] = field(default_factory=dict)
    """The SQLite URI options of ``sqlite:///file:…?uri=true`` (empty otherwise)."""
    lock_timeout_s: float | None = None
    """A SQLite URL's ``timeout``: seconds a statement waits for a lock (``None``: tuner's)."""

    @property
    def shown(self) -> str:
        """The URL as the user gave it, password masked: how messages name the storage."""
        return mask_password(self.url)

    def hide(self, text: str) -> str:
        """``text`` (a database driver's message) with this URL's secrets hidden: the URL
        itself, and a host that holds the rest of a password (an unescaped ``@`` in it)."""
        text = text.replace(self.url, self.shown)
        host = _misread_host(self.url)
        return text.replace(host, f"***@{host.rsplit('@', 1)[1]}") if host else text


def locate(url: str) -> Place:
    """Parse ``url``; raise :class:`ConfigError` for an unknown scheme or a journal without path."""
    scheme = url.split(":", 1)[0].split("+", 1)[0].lower() if ":" in url else ""
    if scheme == "journal":
        return Place(url, "journal", path=_journal_path(url))
    if scheme not in _KNOWN_SCHEMES:
        raise ConfigError(
            f"{named('storage')} {mask_password(url)!r} has an unknown scheme; use e.g. "
            "sqlite:///studies/tuner.db, journal:studies/tuner.log or "
            "postgresql+psycopg://user:pass@host/db"
        )
    if scheme != "sqlite":
        return Place(url, scheme)
    return _sqlite_place(url)


def _journal_path(url: str) -> Path:
    path = Path(url.split(":", 1)[1].removeprefix("//"))
    if not str(path) or str(path) == ".":
        raise ConfigError(
            f"{named('storage')} journal:PATH needs a file path, e.g. journal:studies/tuner.log"
        )
    return path


def _sqlite_place(url: str) -> Place:
    """A ``sqlite:`` URL: plain path, ``file:`` URI (with ``uri=true``), or in memory."""
    import sqlalchemy.exc
    from sqlalchemy.engine import make_url
    from sqlalchemy.util import asbool

    try:
        parsed = make_url(url)
        is_uri = asbool(parsed.query.get("uri", False))
    except (sqlalchemy.exc.ArgumentError, ValueError) as exc:
        raise ConfigError(
            f"{named('storage')} {mask_password(url)!r} is not a valid URL: {exc}"
        ) from None
    database = parsed.database or ""
    options = {key: str(value) for key, value in parsed.query.items()} if is_uri else {}
    if is_uri and database.startswith("file:"):
        database = _uri_file(database)
    memory = database in ("", ":memory:") or options.get("mode") == "memory"
    path = None if memory else Path(database)
    return Place(url, "sqlite", path, memory, options, _lock_timeout(url, parsed.query))


def _lock_timeout(url: str, query: Any) -> float | None:
    """The URL's ``timeout=SECONDS`` (SQLAlchemy hands it to ``sqlite3.connect``)."""
    given = query.get("timeout")
    if given is None:
        return None
    try:
        seconds = float(given)
    except (TypeError, ValueError):
        seconds = -1.0
    if not (0 <= seconds < float("inf")):
        raise ConfigError(
            f"{named('storage')} {mask_password(url)!r}: timeout={given} is not a number of "
            "seconds (how long SQLite waits for another process's lock, e.g. timeout=10)"
        )
    return seconds


def _uri_file(database: str) -> str:
    """``file:studies/x.db`` or ``file:///abs/x.db`` -> the file's path (``:memory:`` kept)."""
    rest = database.removeprefix("file:")
    if rest.startswith("//"):
        rest = rest[2:].removeprefix("localhost")
    return unquote(rest)


_DRIVER_OPTIONS = ("uri", "timeout", "isolation_level", "detect_types", "check_same_thread")
"""Options of a ``sqlite:`` URL that go to Python's ``sqlite3.connect``, not into SQLite's URI."""


def read_only_uri(place: Place) -> str:
    """A SQLite URI that opens ``place``'s file read-only: SQLite itself refuses every write."""
    assert place.path is not None
    options = {k: v for k, v in place.uri_options.items() if k not in ("mode", *_DRIVER_OPTIONS)}
    query = "&".join(f"{key}={value}" for key, value in {**options, "mode": "ro"}.items())
    return f"file:{quote(str(place.path.absolute()))}?{query}"


def read_only_reason(place: Place) -> str | None:
    """Why nothing can be written to ``place`` (``None``: it looks writable, or cannot be told).
    SQLite writes a rollback journal beside the database and the journal storage a lock file,
    so the folder must be writable too."""
    for key, value in _URI_READ_ONLY.items():
        if place.uri_options.get(key) == value:
            return f"its URL opens it with {key}={value}"
    if place.path is None or not place.path.exists():
        return None
    folder = place.path.absolute().parent
    if _on_read_only_mount(folder):
        return f"its folder {folder} is not writable (a read-only file system)"
    if not os.access(place.path, os.W_OK):
        return f"{place.path} is not writable"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"its folder {folder} is not writable"
    return None


def _on_read_only_mount(folder: Path) -> bool:
    """Whether ``folder`` is mounted read-only (root may write nothing there either)."""
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def folder_problem(path: Path) -> str | None:
    """Why the folder of a new file ``path`` cannot be made or written (``None``: it can)."""
    ancestor = path.absolute().parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return f"{ancestor} is not a folder"
    if not os.access(ancestor, os.W_OK | os.X_OK):
        return f"{ancestor} is not writable"
    return None


def describe(exc: BaseException, place: Place | None = None) -> str:
    """The reason behind an error of ``place``'s storage, on one line, its secrets hidden."""
    cause: Any = exc.__cause__ if exc.__cause__ is not None else exc
    reason = " ".join(str(getattr(cause, "orig", None) or cause).split())
    if "readonly database" in reason:
        reason = f"the storage is read-only ({reason})"
    return (place.hide(reason) if place is not None else reason)[:300]
