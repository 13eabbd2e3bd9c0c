"""What a child leaves behind: one result envelope, the same for every mode, and its JSON.

:func:`encode_result` (the child, :mod:`tuner.worker.__main__`) and :func:`decode_result` (the
driver, :mod:`tuner.core.outcome` and the runners' readers) are the only places a result is
written or read. The JSON object holds ``protocol_version`` and the envelope's fields.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tuner.core.protocol._codec import (
    VERSION_KEY,
    check_version,
    from_plain,
    load_object,
    to_plain,
)
from tuner.core.protocol._names import PROTOCOL_VERSION


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
