"""One function turns a storage URL into an Optuna storage; no SQL of our own.

``sqlite:///path.db`` and any SQLAlchemy URL go to ``RDBStorage`` (SQLite with a generous lock
timeout, so several workers can share one file). Connection errors become one clear line with the
password masked.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tuner.errors import ConfigError

DEFAULT_STORAGE = "sqlite:///studies/tuner.db"
SQLITE_TIMEOUT_S = 60

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


def open_storage(url: str, *, create: bool) -> Any:
    """Return an Optuna storage for ``url``.

    With ``create=False`` a SQLite file must already exist (reading never creates a database).
    Raises :class:`ConfigError` for an unknown scheme, a missing or unreadable database, or a
    server that refuses the connection.
    """
    scheme = url.split(":", 1)[0].split("+", 1)[0].lower() if ":" in url else ""
    if scheme not in _KNOWN_SCHEMES:
        raise ConfigError(
            f"--storage {mask_password(url)!r} has an unknown scheme; use e.g. "
            "sqlite:///studies/tuner.db or postgresql+psycopg://user:pass@host/db"
        )
    engine_kwargs: dict[str, Any] = {}
    path = sqlite_path(url)
    if scheme == "sqlite":
        engine_kwargs["connect_args"] = {"timeout": SQLITE_TIMEOUT_S}
        if path is not None:
            if not path.exists() and not create:
                raise ConfigError(f"storage file {path} does not exist")
            if path.exists() and not path.is_file():
                raise ConfigError(f"storage path {path} is not a file")
            if create:
                path.parent.mkdir(parents=True, exist_ok=True)
    import optuna
    import sqlalchemy.exc

    try:
        return optuna.storages.RDBStorage(url, engine_kwargs=engine_kwargs)
    except (sqlalchemy.exc.SQLAlchemyError, ValueError, RuntimeError, ImportError) as exc:
        reason = " ".join(str(getattr(exc, "orig", None) or exc).split())[:300]
        raise ConfigError(
            f"cannot open storage {mask_password(url)}: {mask_password(reason)}"
        ) from exc
