"""The request/event protocol between the driver and the trial process.

The driver writes one JSON request, the worker answers with one JSON result file, and streams
progress on stdout as lines ``TUNER-EVENT {json}``. Both sides import this module, so neither
imports the other.
"""

from __future__ import annotations

import json
from typing import Any

EVENT_PREFIX = "TUNER-EVENT "
WORKER_MODULE = "tuner.worker"
"""``python -m WORKER_MODULE REQUEST.json RESULT.json`` runs one request."""
SUPERVISOR_MODULE = "tuner.worker.supervisor"
"""``python -m SUPERVISOR_MODULE [--trial-dir DIR] -- COMMAND...`` runs the trial child under a
supervisor that leaves no process of the trial behind (Linux)."""
PARENT_PID_ENV = "TUNER_PARENT_PID"
"""The environment variable naming the pid whose death ends a trial process."""
TRIAL_DIR_PREFIX = "tuner-trial-"
"""The name prefix of each trial's temporary folder (request, result, stderr, owner record)."""

DEFAULT_TRIAL_TIMEOUT_S = 1800.0
"""How long the driver waits for one trial process before it kills it (``--trial-timeout``)."""

MODES = ("inspect", "trial", "probe", "validate")
"""What a request asks the worker to do (``request["mode"]``)."""

EPOCH_EVENT = "epoch"
"""``event["event"]`` after each epoch (window): ``epoch``, ``epochs``, ``loss``, ``throughput``,
``samples`` trained so far and ``total_samples``."""
PROGRESS_EVENT = "progress"
"""``event["event"]`` within an epoch, about once a second: ``step``, ``steps``, ``samples``,
``total_samples`` (:class:`tuner.core.progress.StepReporter`)."""


def encode_event(event: dict[str, Any]) -> str:
    """One stdout line (with its newline) carrying ``event``."""
    return EVENT_PREFIX + json.dumps(event) + "\n"


def decode_event(line: str) -> dict[str, Any] | None:
    """The event on ``line``, or ``None`` for any other output (the user's own prints, garbage)."""
    if not line.startswith(EVENT_PREFIX):
        return None
    try:
        event = json.loads(line[len(EVENT_PREFIX) :])
    except ValueError:
        return None
    return event if isinstance(event, dict) else None
