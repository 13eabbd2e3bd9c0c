"""The protocol between the driver and the trial process: typed, versioned, JSON on the wire.

The driver writes one request (:class:`InspectRequest`, :class:`TrialRequest`,
:class:`ProbeRequest` or :class:`ValidateRequest`, each carrying the :class:`Workload`, the
:class:`Budget` and for a run the :class:`~tuner.core.devices.DevicePlan`), the child streams
events on stdout as lines ``TUNER-EVENT {json}`` (:class:`EpochEvent`, :class:`ProgressEvent`,
:class:`WindowsDoneEvent`, :class:`ProbeAttemptEvent`, :class:`ProbeResultEvent`) and answers
with one :class:`Result`. Each is written and read in one place (``encode_*``/``decode_*``);
requests and results carry :data:`PROTOCOL_VERSION`, and either side refuses another version
with one line. Both sides import this package, so neither imports the other.

Behind this face: ``_names`` (the version, modes, event kinds, command line), ``_codec`` (the
dataclass-to-JSON conversion and its errors), ``_requests``, ``_events`` and ``_results``.
"""

from __future__ import annotations

from tuner.core.options import DEFAULT_TRIAL_TIMEOUT_S
from tuner.core.protocol._codec import NotJSONError, ProtocolError, ProtocolVersionError
from tuner.core.protocol._events import (
    EpochEvent,
    Event,
    ProbeAttemptEvent,
    ProbeResultEvent,
    ProgressEvent,
    WindowsDoneEvent,
    decode_event,
    encode_event,
)
from tuner.core.protocol._names import (
    EPOCH_EVENT,
    EVENT_PREFIX,
    MODES,
    PARENT_PID_ENV,
    PROBE_ATTEMPT_EVENT,
    PROBE_RESULT_EVENT,
    PROGRESS_EVENT,
    PROTOCOL_VERSION,
    SUPERVISOR_MODULE,
    TRIAL_DIR_PREFIX,
    WARM_FLAG,
    WINDOWS_DONE_EVENT,
    WORKER_MODULE,
)
from tuner.core.protocol._requests import (
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
from tuner.core.protocol._results import Result, decode_result, encode_result

__all__ = [
    "DEFAULT_TRIAL_TIMEOUT_S",
    "EPOCH_EVENT",
    "EVENT_PREFIX",
    "MODES",
    "PARENT_PID_ENV",
    "PROBE_ATTEMPT_EVENT",
    "PROBE_RESULT_EVENT",
    "PROGRESS_EVENT",
    "PROTOCOL_VERSION",
    "SUPERVISOR_MODULE",
    "TRIAL_DIR_PREFIX",
    "WARM_FLAG",
    "WINDOWS_DONE_EVENT",
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
