"""What a child sends: the events it streams on stdout while it runs, and its one result.

An event is one frozen type per kind, one line each: ``TUNER-EVENT {json}`` with the kind under
``event`` and the event's fields beside it; :func:`encode_event` and :func:`decode_event` are the
only places one is written or read. Events carry no version: the request's version was checked
before any was sent, and a line that does not read as an event of this protocol is passed over
like any other output.

The result envelope is the same for every mode: :func:`encode_result` (the child,
:mod:`tuner.worker.__main__`) and :func:`decode_result` (the driver, :mod:`tuner.core.outcome` and
the runners' readers) are the only places one is written or read. Its JSON object holds
``protocol_version`` and the envelope's fields.
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
    check_version,
    from_plain,
    load_object,
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
    """Within an epoch: ``step`` of ``steps`` steps ran, ``samples`` of ``total_samples``; sent
    about once a second (:class:`tuner.core.progress.StepReporter`)."""

    kind: ClassVar[str] = "progress"
    step: int
    steps: int
    samples: int
    total_samples: int


@dataclass(frozen=True)
class WindowsDoneEvent:
    """Every rate of the run is measured (its timed windows, noise-scale steps, loss checks and,
    in a trial, the input probe): what follows measures no rate, so the driver may start the next
    child's interpreter and framework import now (:mod:`tuner.driver.children._warm`)."""

    kind: ClassVar[str] = "windows_done"


@dataclass(frozen=True)
class ProbeAttemptEvent:
    """A probe child is about to try global batch ``batch``: a child that dies by a signal dies
    at the last size it announced (:func:`tuner.driver.setup.probing.run_probe`)."""

    kind: ClassVar[str] = "probe_attempt"
    batch: int


@dataclass(frozen=True)
class ProbeResultEvent:
    """A probe child tried global batch ``batch``: whether it ``fits``, how long it took, its
    memory peak (where measurable) and, for an out-of-memory, the ``error``. Its fields are
    the probe record's ``attempts`` entries, stored as they are."""

    kind: ClassVar[str] = "probe_result"
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


@dataclass(frozen=True, kw_only=True)
class Result:
    """A child's answer to one request: its ``status``, the ``error`` line (for any status but
    ``ok``), the ``traceback`` of an exception, the child's ``timings`` (phase seconds and wall
    clock marks, :func:`tuner.core.outcome.breakdown`) and the mode's ``payload``.

    The payload stays a mapping: its keys are the names the driver stores as trial user
    attributes and probe, baseline and validation records (``final_loss``, ``throughput``,
    ``attempts``, ``step_losses``, ...), which users' databases and tests read by name, so they
    keep the names and values the child wrote, each mode its own set."""

    status: str
    payload: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None
    traceback: str | None = None
    timings: Mapping[str, float] = field(default_factory=dict)


def encode_result(result: Result) -> str:
    """``result`` as the JSON the driver reads (:func:`decode_result`); a value JSON cannot hold
    (a NumPy array in a payload) is written as its text."""
    return json.dumps({VERSION_KEY: PROTOCOL_VERSION, **to_plain(result)}, default=str)


def decode_result(text: str) -> Result:
    """The result :func:`encode_result` wrote. Raises
    :class:`~tuner.core.protocol.NotJSONError` for text that is not a JSON object,
    :class:`~tuner.core.protocol.ProtocolVersionError` for another protocol version and
    :class:`~tuner.core.protocol.ProtocolError` for any other shape."""
    data = load_object(text, "result")
    check_version(data, "result", "driver")
    fields = {k: v for k, v in data.items() if k != VERSION_KEY}
    return from_plain(Result, fields, "result")
