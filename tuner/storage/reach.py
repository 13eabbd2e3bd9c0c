"""Opening a storage that is out of reach waits for it as a search waits mid-way
(:mod:`tuner.storage.guarded`), with the same two lines. Only an outage is waited for; bad input
is exit 2 at once, and past the bound :class:`StorageFaultError` is exit 1.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import TypeVar

from tuner.core.errors import ConfigError
from tuner.core.options import named
from tuner.storage.faults import StorageFaultError, back_line, classify_opening, waiting_line
from tuner.storage.guarded import what_to_do
from tuner.storage.places import Place

READING_WAIT_S = 30.0
"""The reading commands' default wait: time for a server to restart, not much longer."""
_MAX_DELAY_S = 5.0
_log = logging.getLogger("tuner.storage")

T = TypeVar("T")


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
