"""The names both sides of the protocol agree on: the version, the modes, the event kinds, the
worker's command line and environment."""

from __future__ import annotations

PROTOCOL_VERSION = 1
"""The version of the request, event and result shapes. A child refuses a request of another
version, and the driver a result of another version, with one line: the driver and the worker
are then different tuner versions. Raise it with any change of a shape."""

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
WARM_FLAG = "--warm"
"""``python -m WORKER_MODULE --warm BACKEND REQUEST.json RESULT.json``: a warm child, which imports
BACKEND first and reads REQUEST.json only when a line arrives on its stdin (hand-over)."""


MODES = ("inspect", "trial", "probe", "validate", "lr_find")
"""What a request asks the worker to do (its ``mode``: one request type each)."""

EPOCH_EVENT = "epoch"
"""The kind of :class:`~tuner.core.protocol.EpochEvent`, sent after each epoch (window)."""
WINDOWS_DONE_EVENT = "windows_done"
"""The kind of :class:`~tuner.core.protocol.WindowsDoneEvent`, sent once a run has measured every
rate (its timed windows, noise-scale steps, loss checks and, in a trial, the input probe): what
follows measures no rate, so the driver may start the next child's interpreter and framework
import now (:mod:`tuner.driver.children._warm`)."""
PROBE_ATTEMPT_EVENT = "probe_attempt"
"""The kind of :class:`~tuner.core.protocol.ProbeAttemptEvent`, sent by a probe child before it
tries one size. A child that dies by a signal dies at the last size it announced
(:func:`tuner.driver.setup.probing.run_probe`)."""
PROBE_RESULT_EVENT = "probe_result"
"""The kind of :class:`~tuner.core.protocol.ProbeResultEvent`, sent once a probe child knows
whether a size fits."""
PROGRESS_EVENT = "progress"
"""The kind of :class:`~tuner.core.protocol.ProgressEvent`, sent within an epoch about once a
second (:class:`tuner.core.progress.StepReporter`)."""
