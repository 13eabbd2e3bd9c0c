"""The spool: a trial's measured result, kept in a file until the storage has it (written first,
atomically; gone once the storage has the trial's final state). The next ``tuner search`` records
what a failed storage missed (:mod:`tuner.driver.trial.spooled`); a spooled result is never thrown
away unread. One folder per storage under ``$TUNER_SPOOL_DIR``, else
``$XDG_STATE_HOME/tuner/spool``, else ``~/.local/state/tuner/spool``; not the trial folders:
they go when their trial ends.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tuner.storage.places import Place

_log = logging.getLogger("tuner.storage")


def spool_root() -> Path:
    """The folder holding every storage's spool."""
    if os.environ.get("TUNER_SPOOL_DIR"):
        return Path(os.environ["TUNER_SPOOL_DIR"])
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "tuner" / "spool"


def spool_folder(place: Place) -> Path:
    """The spool of the storage at ``place``: its kind and a digest of its file or URL."""
    where = str(place.path.absolute()) if place.path is not None else place.shown
    digest = hashlib.sha256(where.encode()).hexdigest()[:16]
    return spool_root() / f"{place.kind}-{digest}"


def write(folder: Path, trial_id: int, record: dict[str, Any]) -> Path:
    """Write ``record`` as ``trial_id``'s spooled result, atomically; the file's path."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"trial-{trial_id}.json"
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".trial-", suffix=".tmp")
    try:
        with os.fdopen(handle, "w") as file:
            json.dump({"trial_id": trial_id, **record}, file, default=str)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return target


def discard(
    folder: Path, trial_id: int, state: str | None = None, values: Sequence[float] | None = None
) -> None:
    """The storage has ``trial_id``'s result: its spooled copy goes; with ``state``, only a copy
    of that state and those values (not another result's)."""
    path = folder / f"trial-{trial_id}.json"
    if state is not None:
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            return
        if not is_record(record):
            return
        if record["state"] != state or record.get("values") != _listed(values):
            return
    with contextlib.suppress(OSError):
        path.unlink()


def _listed(values: Sequence[float] | None) -> list[float] | None:
    return [float(v) for v in values] if values is not None else None


def pending(folder: Path, study_name: str | None = None) -> list[dict[str, Any]]:
    """Spooled results in ``folder`` (of ``study_name``), oldest first; non-results set aside."""
    records = []
    with contextlib.suppress(OSError):
        for path in folder.glob("trial-*.json"):
            try:
                record = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if not is_record(record):
                set_aside(path)
                continue
            if study_name is None or record["study"] == study_name:
                records.append(record)
    return sorted(records, key=lambda r: int(r["trial_id"]))


_STATES = ("COMPLETE", "PRUNED", "FAIL")


def is_record(record: Any) -> bool:
    """Whether ``record`` has the shape :func:`write` gives a spooled result."""
    if not isinstance(record, dict):
        return False
    values = record.get("values")
    return (
        type(record.get("trial_id")) is int
        and isinstance(record.get("study"), str)
        and type(record.get("number")) is int
        and record.get("state") in _STATES
        and isinstance(record.get("attrs"), dict)
        and (values is None or (isinstance(values, list) and all(_is_number(v) for v in values)))
    )


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def set_aside(path: Path) -> None:
    """Rename a file that is no spooled result to ``*.not-a-result``, with one warning."""
    aside = path.with_name(path.name + ".not-a-result")
    with contextlib.suppress(OSError):
        os.replace(path, aside)
        _log.warning(
            "%s is not a spooled result (another shape than tuner writes): set aside as %s; "
            "the study goes on without it",
            path,
            aside.name,
        )
