"""The protocol between the driver and the trial process: typed, versioned, JSON on the wire.

The driver writes one request, the child streams events on stdout (``TUNER-EVENT {json}``) and
answers with one :class:`Result`; each is written and read in one place (``encode_*`` /
``decode_*``), and either side refuses another :data:`PROTOCOL_VERSION` with one line. Both sides
import this package, so neither imports the other. Here too: the worker's command line and
environment.
"""

from __future__ import annotations

from tuner.core.options import DEFAULT_TRIAL_TIMEOUT_S
from tuner.core.protocol._codec import (
    PROTOCOL_VERSION,
    NotJSONError,
    ProtocolError,
    ProtocolVersionError,
)
from tuner.core.protocol._events import (
    EVENT_PREFIX,
    EpochEvent,
    Event,
    ProbeAttemptEvent,
    ProbeResultEvent,
    ProgressEvent,
    Result,
    WindowsDoneEvent,
    decode_event,
    decode_result,
    encode_event,
    encode_result,
)
from tuner.core.protocol._requests import (
    MODES,
    Budget,
    EarlyStop,
    InspectRequest,
    LearningRateRule,
    LrFindRequest,
    ProbeRequest,
    Request,
    RunRequest,
    Target,
    TrialRequest,
    ValidateRequest,
    Workload,
    decode_request,
    encode_request,
)

WORKER_MODULE = "tuner.worker"
"""``python -m WORKER_MODULE REQUEST.json RESULT.json`` runs one request."""
SUPERVISOR_MODULE = "tuner.worker.supervisor"
"""``python -m SUPERVISOR_MODULE [--trial-dir DIR] -- COMMAND...`` runs the trial child under a
supervisor that leaves no process of the trial behind (Linux)."""
FORK_SERVER_MODULE = "tuner.worker.fork_server"
"""``python -m FORK_SERVER_MODULE BACKEND FD``: imports BACKEND once, then forks warm children on
the driver's word over the Unix socket FD (:mod:`tuner.worker.fork_server`)."""
PARENT_PID_ENV = "TUNER_PARENT_PID"
"""The environment variable naming the pid whose death ends a trial process."""
TRIAL_DIR_PREFIX = "tuner-trial-"
"""The name prefix of each trial's temporary folder (request, result, stderr, owner record)."""
WARM_FLAG = "--warm"
"""``python -m WORKER_MODULE --warm BACKEND REQUEST.json RESULT.json``: a warm child, which imports
BACKEND first and reads REQUEST.json only when a line arrives on its stdin (hand-over)."""

__all__ = [
    "DEFAULT_TRIAL_TIMEOUT_S",
    "EVENT_PREFIX",
    "FORK_SERVER_MODULE",
    "MODES",
    "PARENT_PID_ENV",
    "PROTOCOL_VERSION",
    "SUPERVISOR_MODULE",
    "TRIAL_DIR_PREFIX",
    "WARM_FLAG",
    "WORKER_MODULE",
    "Budget",
    "EarlyStop",
    "EpochEvent",
    "Event",
    "InspectRequest",
    "LearningRateRule",
    "LrFindRequest",
    "NotJSONError",
    "ProbeAttemptEvent",
    "ProbeRequest",
    "ProbeResultEvent",
    "ProgressEvent",
    "ProtocolError",
    "ProtocolVersionError",
    "Request",
    "Result",
    "RunRequest",
    "Target",
    "TrialRequest",
    "ValidateRequest",
    "WindowsDoneEvent",
    "Workload",
    "decode_event",
    "decode_request",
    "decode_result",
    "encode_event",
    "encode_request",
    "encode_result",
]
