"""What a child sends: the events it streams on stdout while it runs, and its one result.

An event is one line, ``TUNER-EVENT {json}``, its kind under ``event`` beside its fields. Events
carry no version: the request's was checked before any was sent, and a line that does not read
as an event of this protocol is passed over like any other output. The result is one envelope for
every mode, its JSON object ``protocol_version`` beside the envelope's fields.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from tuner.core.protocol._codec import (
    PROTOCOL_VERSION,
    VERSION_KEY,
    ProtocolError,
    from_plain,
    load_message,
    to_plain,
)

EVENT_PREFIX = "TUNER-EVENT "


@dataclass(frozen=True)
class EpochEvent:
    """An epoch (window) ended: its 1-based number of ``epochs``, its training loss and
    throughput, and the ``samples`` trained so far of ``total_samples``."""

    kind: ClassVar[str] = "epoch"
    epoch: int
    epochs: int
    loss: float
    throughput: float
    samples: int
    total_samples: int


@dataclass(frozen=True)
class ProgressEvent:
    """Within an epoch, about once a second."""

    kind: ClassVar[str] = "progress"
    step: int
    steps: int
    samples: int
    total_samples: int


@dataclass(frozen=True)
class WindowsDoneEvent:
    """Every rate of the run is measured: what follows measures no rate, so the driver may start
    the next child's interpreter and framework import now."""

    kind: ClassVar[str] = "windows_done"


@dataclass(frozen=True)
class ProbeAttemptEvent:
    """A probe child tries ``batch``: one killed by a signal died at the last size it announced."""

    kind: ClassVar[str] = "probe_attempt"
    batch: int


@dataclass(frozen=True)
class ProbeResultEvent:
    """A probe child tried ``batch``: the probe record's ``attempts`` entry, stored as it is."""

    kind: ClassVar[str] = "probe_result"
    batch: int
    fits: bool
    seconds: float
    peak_memory_bytes: int | None = None
    error: str | None = None


Event = EpochEvent | ProgressEvent | WindowsDoneEvent | ProbeAttemptEvent | ProbeResultEvent

_TYPES: dict[str, type[Event]] = {
    kind.kind: kind
    for kind in (EpochEvent, ProgressEvent, WindowsDoneEvent, ProbeAttemptEvent, ProbeResultEvent)
}


def encode_event(event: Event) -> str:
    """One stdout line (with its newline) carrying ``event``."""
    return EVENT_PREFIX + json.dumps({"event": event.kind, **to_plain(event)}) + "\n"


def decode_event(line: str) -> Event | None:
    """The event on ``line``, or ``None`` for any other output (the user's prints, garbage)."""
    if not line.startswith(EVENT_PREFIX):
        return None
    try:
        data = json.loads(line[len(EVENT_PREFIX) :])
    except ValueError:
        return None
    kind = _TYPES.get(str(data.pop("event", ""))) if isinstance(data, dict) else None
    if kind is None:
        return None
    try:
        return from_plain(kind, data, f"event {kind.kind}")
    except ProtocolError:
        return None


@dataclass(frozen=True, kw_only=True)
class Result:
    """A child's answer to one request: ``error`` for any ``status`` but ``ok``, ``timings``
    (:func:`tuner.core.outcome.breakdown`) and the mode's ``payload``. The payload stays a
    mapping: its keys are the names the driver stores as user attributes and records, which
    users' databases read by name, so they keep the names the child wrote."""

    status: str
    payload: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None
    traceback: str | None = None
    timings: Mapping[str, float] = field(default_factory=dict)


def encode_result(result: Result) -> str:
    """``result`` as JSON; a value JSON cannot hold (a NumPy array) is written as its text."""
    return json.dumps({VERSION_KEY: PROTOCOL_VERSION, **to_plain(result)}, default=str)


def decode_result(text: str) -> Result:
    """The result :func:`encode_result` wrote; a :class:`ProtocolError` for anything else."""
    return from_plain(Result, load_message(text, "result", "driver"), "result")
