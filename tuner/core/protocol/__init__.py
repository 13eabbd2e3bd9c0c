"""The protocol between the driver and the trial process: typed, versioned, JSON on the wire
(docs/design/architecture.md, "The contract between driver and child"). Each message is written
and read in one place (``encode_*`` / ``decode_*``); both sides import this package, so neither
imports the other. Here too: the worker's command line and environment.
"""

from __future__ import annotations

from tuner.core.options import DEFAULT_TRIAL_TIMEOUT_S as DEFAULT_TRIAL_TIMEOUT_S
from tuner.core.protocol._codec import PROTOCOL_VERSION as PROTOCOL_VERSION
from tuner.core.protocol._codec import NotJSONError as NotJSONError
from tuner.core.protocol._codec import ProtocolError as ProtocolError
from tuner.core.protocol._codec import ProtocolVersionError as ProtocolVersionError
from tuner.core.protocol._events import EVENT_PREFIX as EVENT_PREFIX
from tuner.core.protocol._events import EpochEvent as EpochEvent
from tuner.core.protocol._events import Event as Event
from tuner.core.protocol._events import ProbeAttemptEvent as ProbeAttemptEvent
from tuner.core.protocol._events import ProbeResultEvent as ProbeResultEvent
from tuner.core.protocol._events import ProgressEvent as ProgressEvent
from tuner.core.protocol._events import Result as Result
from tuner.core.protocol._events import WindowsDoneEvent as WindowsDoneEvent
from tuner.core.protocol._events import decode_event as decode_event
from tuner.core.protocol._events import decode_result as decode_result
from tuner.core.protocol._events import encode_event as encode_event
from tuner.core.protocol._events import encode_result as encode_result
from tuner.core.protocol._requests import MODES as MODES
from tuner.core.protocol._requests import Budget as Budget
from tuner.core.protocol._requests import EarlyStop as EarlyStop
from tuner.core.protocol._requests import GangSeat as GangSeat
from tuner.core.protocol._requests import InspectRequest as InspectRequest
from tuner.core.protocol._requests import LearningRateRule as LearningRateRule
from tuner.core.protocol._requests import LrFindRequest as LrFindRequest
from tuner.core.protocol._requests import ProbeRequest as ProbeRequest
from tuner.core.protocol._requests import Request as Request
from tuner.core.protocol._requests import RunRequest as RunRequest
from tuner.core.protocol._requests import Target as Target
from tuner.core.protocol._requests import TrialRequest as TrialRequest
from tuner.core.protocol._requests import ValidateRequest as ValidateRequest
from tuner.core.protocol._requests import Workload as Workload
from tuner.core.protocol._requests import decode_request as decode_request
from tuner.core.protocol._requests import encode_request as encode_request

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
