"""What a child streams on stdout while it runs: one frozen event type per kind, one line each.

A line is ``TUNER-EVENT {json}`` with the kind under ``event`` and the event's fields beside it;
:func:`encode_event` and :func:`decode_event` are the only places one is written or read. Events
carry no version: the request's version was checked before any was sent, and a line that does
not read as an event of this protocol is passed over like any other output.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

from tuner.core.protocol._codec import ProtocolError, from_plain, to_plain
from tuner.core.protocol._names import (
    EPOCH_EVENT,
    EVENT_PREFIX,
    PROBE_ATTEMPT_EVENT,
    PROBE_RESULT_EVENT,
    PROGRESS_EVENT,
    WINDOWS_DONE_EVENT,
)


@dataclass(frozen=True)
class EpochEvent:
    """An epoch (window) ended: its 1-based number of ``epochs``, its training loss and
    throughput, and the ``samples`` trained so far of ``total_samples``."""

    kind: ClassVar[str] = EPOCH_EVENT
    epoch: int
    epochs: int
    loss: float
    throughput: float
    samples: int
    total_samples: int


@dataclass(frozen=True)
class ProgressEvent:
    """Within an epoch: ``step`` of ``steps`` steps ran, ``samples`` of ``total_samples``."""

    kind: ClassVar[str] = PROGRESS_EVENT
    step: int
    steps: int
    samples: int
    total_samples: int


@dataclass(frozen=True)
class WindowsDoneEvent:
    """Every rate of the run is measured (see :data:`~tuner.core.protocol.WINDOWS_DONE_EVENT`)."""

    kind: ClassVar[str] = WINDOWS_DONE_EVENT


@dataclass(frozen=True)
class ProbeAttemptEvent:
    """A probe child is about to try global batch ``batch``."""

    kind: ClassVar[str] = PROBE_ATTEMPT_EVENT
    batch: int


@dataclass(frozen=True)
class ProbeResultEvent:
    """A probe child tried global batch ``batch``: whether it ``fits``, how long it took, its
    memory peak (where measurable) and, for an out-of-memory, the ``error``. Its fields are
    the probe record's ``attempts`` entries, stored as they are."""

    kind: ClassVar[str] = PROBE_RESULT_EVENT
    batch: int
    fits: bool
    seconds: float
    peak_memory_bytes: int | None = None
    error: str | None = None


Event = EpochEvent | ProgressEvent | WindowsDoneEvent | ProbeAttemptEvent | ProbeResultEvent
"""Any event a child sends."""

_TYPES: dict[str, type[Event]] = {
    kind.kind: kind
    for kind in (EpochEvent, ProgressEvent, WindowsDoneEvent, ProbeAttemptEvent, ProbeResultEvent)
}


def encode_event(event: Event) -> str:
    """One stdout line (with its newline) carrying ``event``."""
    return EVENT_PREFIX + json.dumps({"event": event.kind, **to_plain(event)}) + "\n"


def decode_event(line: str) -> Event | None:
    """The event on ``line``, or ``None`` for any other output (the user's own prints, garbage,
    an event this protocol does not know)."""
    if not line.startswith(EVENT_PREFIX):
        return None
    try:
        data = json.loads(line[len(EVENT_PREFIX) :])
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    kind = _TYPES.get(str(data.pop("event", "")))
    if kind is None:
        return None
    try:
        return from_plain(kind, data, f"event {kind.kind}")
    except ProtocolError:
        return None
