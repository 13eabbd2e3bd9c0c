"""Opening a storage that is out of reach: a worker started while its PostgreSQL server is down or
restarting, or while another process holds the SQLite file locked, waits for it as a search
waits mid-way (:mod:`tuner.storage.guarded`), with the same two lines.

Only an outage is waited for (:func:`tuner.storage.faults.classify_opening`): a refused or timed
out connection, a server starting up or shutting down, a locked SQLite file. A wrong URL, user,
password, host or database name is bad input and stays one line and exit 2 at once. Past the
bound, :class:`StorageFaultError`: exit 1, one line naming the storage and what to do.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from tuner.core.errors import ConfigError
from tuner.storage.faults import StorageFaultError, back_line, classify_opening, waiting_line
from tuner.storage.guarded import what_to_do
from tuner.storage.places import Place

__all__ = ["READING_WAIT_S", "reached"]

READING_WAIT_S = 30.0
"""How long the commands without ``--storage-wait`` (``tuner show``, ``tuner export``, the
dashboard, :func:`tuner.load`) wait for a storage out of reach when they open it: long enough for
a server to restart, short enough that a stopped one is said soon."""
_MAX_DELAY_S = 5.0
_log = logging.getLogger("tuner.storage")

T = TypeVar("T")


def reached(place: Place, wait_s: float | None, attempt: Callable[[], T]) -> T:
    """``attempt()`` (which opens ``place``), tried again while the :class:`ConfigError` it raises
    comes from an outage, for ``wait_s`` seconds (``None``: :data:`READING_WAIT_S`, a command
    with no ``--storage-wait``). Any other error is raised at once, as it was."""
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
                line = waiting_line(
                    place, fault.reason, bound, trial_running=False, flag=wait_s is not None
                )
                _log.warning(line)
            waited = now - since
            if waited >= bound:
                raise _gave_up(place, fault.reason, waited, searching=wait_s is not None) from exc
            time.sleep(min(delay, bound - waited))
            delay = min(2 * delay, _MAX_DELAY_S)
            continue
        if since is not None:
            _log.warning(back_line(place, time.monotonic() - since))
        return result


def _gave_up(place: Place, reason: str, waited: float, *, searching: bool) -> StorageFaultError:
    if searching:
        todo = what_to_do(place, reason)
        return StorageFaultError(
            f"storage {place.shown} cannot be opened: {reason}, still after waiting "
            f"{waited:.0f} s (--storage-wait); {todo}"
        )
    todo = what_to_do(place, reason, then="run the command again", flag=False)
    return StorageFaultError(
        f"storage {place.shown} cannot be opened: {reason}, still after waiting {waited:.0f} s; "
        f"{todo}"
    )
