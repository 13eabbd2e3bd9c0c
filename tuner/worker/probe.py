"""Inside the child: one probe of the batch-size search (mode ``probe``).

A probe trains like a trial but only asks whether the batch fits: it reports the memory peak,
not the validation loss, and does not measure the noise scale. Backend-neutral, as a trial.
"""

from __future__ import annotations

from typing import Any

from tuner.worker.meters import Emit
from tuner.worker.runs import open_session, peak_memory_bytes, summary, train


def run_probe(request: dict[str, Any], emit: Emit) -> dict[str, Any]:
    """Train at the request's batch; status ``ok`` with the memory peak (raises if it fails)."""
    session = open_session(request, emit)
    train(session)
    return {
        **summary(session),
        "status": "ok",
        "probe": True,
        "peak_memory_bytes": peak_memory_bytes(session),
    }
