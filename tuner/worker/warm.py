"""Inside a warm child: import the backend first, then wait for the request.

It imports BACKEND, touching no device, then blocks on stdin until the driver writes one line;
end of input means it was withdrawn. The import done before hand-over is ``import_hidden_s``,
outside the trial's wall time; its part after hand-over counts as ``import_s``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from tuner.core.protocol import WARM_FLAG
from tuner.worker.modes import Modes


def split_argv(argv: list[str]) -> tuple[str | None, list[str]]:
    """``[--warm BACKEND] REQUEST RESULT`` -> (BACKEND or ``None``, ``[REQUEST, RESULT]``)."""
    if argv[:1] != [WARM_FLAG] or len(argv) < 2:
        return None, argv
    return argv[1], argv[2:]


@dataclass
class Preloaded:
    """What a warm child imported before its request (the runners or the error), how long it took
    and when it ended; after hand-over, how much of it ran inside the trial (``visible_s``)."""

    backend: str
    table: Modes | None
    error: Exception | None
    import_s: float
    imported_at: float
    visible_s: float = 0.0

    def handed_over(self, spawned_at: float | None, taken_at: float) -> float:
        """Note the hand-over; the trial's wall start is ``taken_at`` moved back by the import
        that ran after hand-over, so that import counts as ``import_s``."""
        handed_at = spawned_at or taken_at
        self.visible_s = min(self.import_s, max(0.0, self.imported_at - handed_at))
        return taken_at - self.visible_s

    @property
    def hidden_s(self) -> float:
        """The import done before hand-over, outside the trial's wall (``import_hidden_s``)."""
        return self.import_s - self.visible_s

    def runners(self, backend: str, load: Callable[[str], Modes]) -> tuple[Modes, float]:
        """The modes for ``backend`` and its ``import_s``: imported already, or (another backend,
        never handed over) now. Raises what the early import raised."""
        if backend != self.backend:
            started = time.perf_counter()
            return load(backend), time.perf_counter() - started
        if self.error is not None:
            raise self.error
        assert self.table is not None
        return self.table, self.visible_s


_INHERITED: Preloaded | None = None
"""What the fork server imported before it forked this child (:func:`inherit`)."""


def inherit(preloaded: Preloaded) -> None:
    """In a child of the fork server: the server's import, which this child did not pay
    (``import_s`` 0)."""
    global _INHERITED
    _INHERITED = replace(preloaded, import_s=0.0)


def preload(backend: str, load: Callable[[str], Modes]) -> Preloaded:
    """Import ``backend``'s modes now (or take the fork server's); an import error is kept."""
    if _INHERITED is not None and _INHERITED.backend == backend:
        return _INHERITED
    started = time.perf_counter()
    table: Modes | None = None
    error: Exception | None = None
    try:
        table = load(backend)
    except Exception as exc:  # reported with the request, like a cold child's import error
        error = exc
    return Preloaded(backend, table, error, time.perf_counter() - started, time.time())


def wait_for_request() -> float:
    """Block until the driver hands the request over (one line on stdin); the wall time it came.
    End of input exits: the driver withdrew this child."""
    line = sys.stdin.buffer.readline()
    if not line:
        os._exit(0)
    # Then end of input, as a started trial's stdin gives: code that reads it must not wait (a
    # forked spare's supervisor holds the pipe's other end).
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    return time.time()
