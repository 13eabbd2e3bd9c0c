"""What went wrong with a storage that was open and working: one line for the user, and whether
waiting can help (an outage) or not (a fault). Both end as :class:`StorageFaultError` (exit 1).
"""

from __future__ import annotations

import errno
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from tuner.core.errors import TunerError
from tuner.core.options import named
from tuner.storage.places import Place, mask_password, read_only_reason


class StorageFaultError(TunerError):
    """A storage failed after it was opened; the message is the one line the user reads."""


@dataclass(frozen=True)
class Fault:
    """A storage error, classified: ``outage`` says whether waiting may end it."""

    outage: bool
    reason: str
    """What happened, on one line, e.g. "the disk is full (0 B free in /data)"."""


_OUTAGE_WORDS = (
    "database is locked",
    "connection refused",
    "could not connect",
    "connection failed",
    "server closed the connection",
    "terminating connection",
    "connection is closed",
    "connection already closed",
    "the database system is starting up",
    "the database system is shutting down",
    "the database system is in recovery mode",
    "consuming input failed",
    "no route to host",
    "network is unreachable",
    "timeout expired",
    "timed out",
    "connection reset",
    "broken pipe",
    "ssl syscall error",
    "adminshutdown",
    "cannot connect now",
    "too many clients already",
    "remaining connection slots are reserved",
)
_NEVER_AT_OPENING = (
    "authentication failed",
    "no password supplied",
    "password authentication",
    "could not translate host name",
    "failed to resolve host",
    "name or service not known",
    "nodename nor servname",
    "temporary failure in name resolution",
    "no such host",
    "does not exist",
    "invalid dsn",
    "invalid connection option",
    "could not parse",
    "can't load plugin",
)
"""What waiting cannot mend when a storage is first opened: a wrong password or user, an
unknown host, a database that is not there, a URL that is not one. These stay exit 2 at once."""
_SCHEMA_WORDS = ("no such table", "no such column", "does not exist")


def file_identity(path: Path) -> tuple[int, int] | None:
    """The device and inode of ``path`` (``None``: it is not there)."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


def file_problem(place: Place, identity: tuple[int, int] | None) -> str | None:
    """Whether the file opened as ``identity`` was deleted or replaced since (SQLite would
    write on into the deleted file, Optuna's journal start a new one)."""
    if place.kind not in ("sqlite", "journal") or place.path is None or identity is None:
        return None
    now = file_identity(place.path)
    what = "journal file" if place.kind == "journal" else "database file"
    if now is None:
        return f"the {what} {place.path} was deleted while the search ran"
    if now != identity:
        return f"the {what} {place.path} was replaced by another file while the search ran"
    return None


def classify(exc: BaseException, place: Place, identity: tuple[int, int] | None = None) -> Fault:
    """Classify a storage error raised by Optuna or SQLAlchemy (looking down its chain)."""
    gone = file_problem(place, identity)
    if gone is not None:
        return Fault(False, gone)
    text = " ".join(_chain_text(exc).split())
    lowered = text.lower()
    if _is_disk_full(exc, lowered):
        return Fault(False, f"the disk is full ({_free_space(place)})")
    read_only = read_only_reason(place) if place.kind == "sqlite" else None
    if (
        "readonly database" in lowered
        or "permission denied" in lowered
        or _errno(exc) in (errno.EACCES, errno.EPERM, errno.EROFS)
        # SQLite cannot make its rollback journal in a folder it may no longer write
        or (read_only is not None and "unable to open database file" in lowered)
    ):
        return Fault(False, f"permission to write it was lost ({read_only or _short(text)})")
    if place.kind != "sqlite" and "database" in lowered and "does not exist" in lowered:
        return Fault(False, f"the database was dropped ({_short(text)})")
    if any(word in lowered for word in _OUTAGE_WORDS) or _invalidated(exc):
        return Fault(True, f"it cannot be reached ({_short(text)})")
    if "unable to open database file" in lowered:
        return Fault(False, f"its file cannot be opened any more ({_short(text)})")
    if any(word in lowered for word in _SCHEMA_WORDS) or "undefined" in lowered:
        return Fault(
            False,
            "its tables were changed or removed (another tuner or Optuna version, or by hand): "
            f"{_short(text)}",
        )
    return Fault(False, _short(text) or type(exc).__name__)


def classify_opening(exc: BaseException, place: Place) -> Fault:
    """:func:`classify` while opening: a wrong URL, user, password, host or database is never
    an outage, whatever else the driver's message says."""
    lowered = " ".join(_chain_text(exc).split()).lower()
    if any(word in lowered for word in _NEVER_AT_OPENING):
        return Fault(False, _short(_chain_text(exc)))
    return classify(exc, place)


def waiting_line(
    place: Place, reason: str, wait_s: float, *, trial_running: bool, flag: bool = True
) -> str:
    """The line said when waiting starts; ``flag``: the bound is a flag."""
    bound = f" ({named('storage_wait')})" if flag else ""
    going_on = "; the running trial goes on" if trial_running else ""
    return f"storage {place.shown}: {reason}; waiting up to {wait_s:.0f} s for it{bound}{going_on}"


def back_line(place: Place, lasted_s: float) -> str:
    """The line said when a storage waited for answers again."""
    return f"storage {place.shown} is back after {lasted_s:.0f} s"


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the errors behind it (each one's cause, else its context)."""
    seen: BaseException | None = exc
    while seen is not None:
        yield seen
        seen = seen.__cause__ or seen.__context__


def _chain_text(exc: BaseException) -> str:
    """The most specific message down the chain: the database driver's own where there is one
    (Optuna's ``StorageInternalError`` says only that the commit failed)."""
    first = ""
    for seen in islice(_chain(exc), 8):
        orig: Any = getattr(seen, "orig", None)
        if orig is not None:
            return f"{type(orig).__name__}: {orig}"
        if isinstance(seen, OSError):
            return f"{type(seen).__name__}: {seen}"
        first = first or f"{type(seen).__name__}: {seen}"
    return first


_DISK_FULL_WORDS = (
    "database or disk is full",
    "no space left on device",
    "diskfull",
    "could not extend file",
)


def _is_disk_full(exc: BaseException, lowered: str) -> bool:
    return any(word in lowered for word in _DISK_FULL_WORDS) or _errno(exc) == errno.ENOSPC


def _errno(exc: BaseException) -> int | None:
    numbers = (e.errno for e in _chain(exc) if isinstance(e, OSError) and e.errno is not None)
    return next(numbers, None)


def _invalidated(exc: BaseException) -> bool:
    """SQLAlchemy marks an error that broke the connection (the server went away)."""
    return any(getattr(e, "connection_invalidated", False) for e in _chain(exc))


def _free_space(place: Place) -> str:
    """How much space the storage's folder has left."""
    if place.path is None:
        return "on the database server"
    folder = place.path.absolute().parent
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return f"the free space of {folder} is unknown"
    return f"{_bytes(free)} free in {folder}"


def _bytes(count: int) -> str:
    size = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{count} B"


def _short(text: str) -> str:
    return mask_password(text)[:240]
