"""What a fake child leaves behind, written as the real child writes it.

Fakes describe a result flat, as it reads best in a test: ``status``, ``error``, ``traceback`` and
``timings`` beside the payload's fields; :func:`result_text` puts them into the protocol's
:class:`~tuner.core.protocol.Result` envelope (:func:`~tuner.core.protocol.encode_result`).
"""

from __future__ import annotations

from typing import Any

from tuner.core.protocol import Result, encode_result

_ENVELOPE = ("status", "error", "traceback", "timings")


def result_of(flat: dict[str, Any]) -> Result:
    """The envelope of a flat result: its envelope fields, the rest as the payload."""
    payload = {k: v for k, v in flat.items() if k not in _ENVELOPE}
    return Result(
        status=flat["status"],
        error=flat.get("error"),
        traceback=flat.get("traceback"),
        timings=flat.get("timings") or {},
        payload=payload,
    )


def result_text(flat: dict[str, Any]) -> str:
    """The result file a child would leave for a flat result."""
    return encode_result(result_of(flat))
