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
WINDOWS_DONE_EVENT = "windows_done"
"""``event["event"]`` once a run has measured every rate (its timed windows, noise-scale steps,
loss checks and, in a trial, the input probe): what follows measures no rate, so the driver may
start the next child's interpreter and framework import now (:mod:`tuner.driver.children._warm`)."""
WARM_FLAG = "--warm"
"""``python -m WORKER_MODULE --warm BACKEND REQUEST.json RESULT.json``: a warm child, which imports
BACKEND first and reads REQUEST.json only when a line arrives on its stdin (hand-over)."""
PROBE_ATTEMPT_EVENT = "probe_attempt"
"""``event["event"]`` in a probe child before it tries one size: ``batch``. A child that dies
by a signal dies at the last size it announced (:func:`tuner.driver.probing.run_probe`)."""
PROBE_RESULT_EVENT = "probe_result"
"""``event["event"]`` once a probe child knows whether a size fits: ``batch``, ``fits``,
``seconds``, ``peak_memory_bytes``, ``error`` (out-of-memory only)."""
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
