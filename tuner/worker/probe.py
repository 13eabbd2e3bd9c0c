"""Inside the child: one probe of the batch-size search (mode ``probe``).

A probe trains like a trial but only asks whether the batch fits: it reports the memory peak,
not the validation loss, and does not measure the noise scale.
"""

from __future__ import annotations

from typing import Any

from tuner.worker.meters import Emit, peak_memory_bytes
from tuner.worker.session import open_session, summary, train


def run_probe(request: dict[str, Any], emit: Emit) -> dict[str, Any]:
    """Train at the request's batch; status ``ok`` with the memory peak (raises if it fails)."""
    session = open_session(request, emit)
    train(session)
    return {
        **summary(session),
        "status": "ok",
        "probe": True,
        "peak_memory_bytes": peak_memory_bytes(session.plan),
    }
