"""The one place where a trial's outcome is decided: what a child left behind -> a status.

Statuses and the Optuna state each ends in:

================  =========  ==========================================================
status            state      meaning
================  =========  ==========================================================
``ok``            COMPLETE   trained; values are ``[final_loss, throughput]``
``oom``           PRUNED     ran out of device memory at this global batch
``oom-implied``   PRUNED     not launched: a smaller or equal batch already ran out
``bracketed``     PRUNED     not launched: an LR sweep's rate beyond a worse rate than the best
                             at its batch (:mod:`tuner.core.adaptive_sweep`); ``error`` says why
``batch-failed``  PRUNED     not launched: two rules at this batch failed with the same error
``diverged``      PRUNED     the loss became NaN or infinite; stopped early
``dominated``     PRUNED     stopped early: a sequential test found it worse than the best
                             (:mod:`tuner.core.dominance`); ``dominance`` holds the evidence
``timeout``       FAIL       killed (with its process group) after ``--trial-timeout``
``crashed``       FAIL       died by a signal with no memory cap set
``error``         FAIL       any other failure; ``error`` keeps the message tail
``interrupted``   FAIL       stopped by Ctrl-C or SIGTERM (marked by the objective)
================  =========  ==========================================================
"""

from __future__ import annotations

import math
import signal
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from tuner.core.errors import TunerError, WorkloadError
from tuner.core.oom import is_probable_oom, last_message
from tuner.core.protocol import (
    NotJSONError,
    ProtocolError,
    ProtocolVersionError,
    Result,
    decode_result,
)
from tuner.core.record import STATES

NOT_LAUNCHED = frozenset({"oom-implied", "bracketed", "batch-failed"})
"""Statuses of trials that ended without a child: they took no training time."""

_RESULT_ATTRS = (
    "train_loss",
    "final_loss",
    "throughput",
    "throughput_spread",
    "epoch_throughputs",
    "window_throughputs",
    "warmup_windows",
    "epoch_losses",
    "peak_memory_bytes",
    "peak_rss_bytes",
    "devices",
    "backend",
    "device_kind",
    "precision",
    "optimizer_learning_rate",
    "optimizer",
    "compile",
    "model_parameters",
    "model_layers",
    "gradient_noise_scale",
    "gradient_noise_scale_per_epoch",
    "noise_scale_steps",
    "noise_scale_note",
    "add_loss_note",
    "noise_scale_skipped",
    "val_metrics",
    "steps_per_epoch",
    "windows",
    "window_steps",
    "train_samples_used",
    "val_samples_used",
    "input_form",
    "input_rebatched",
    "input_throughput",
    "input_bound",
    "timings",
    # time to target (tuner.worker.target)
    "target_loss",
    "eval_every_samples",
    "reached_target",
    "samples_to_target",
    "time_to_target_s",
    "target_curve",
    "compile_s",
    "eval_s",
    # early stopping (tuner.core.dominance)
    "val_curve",
    "dominance",
    "early_stop_skipped",
)


@dataclass(frozen=True)
class ChildRun:
    """What a finished child process left behind, before any interpretation."""

    returncode: int
    result_text: str | None
    stderr_tail: str = ""
    timed_out: bool = False
    wall_s: float = 0.0
    spawned_at: float | None = None
    ended_at: float | None = None
    rank: str = ""
    """Across hosts, whose run decided the trial (``rank 1 of 2``): its error says so."""


@dataclass(frozen=True)
class TrialOutcome:
    """A trial's status, its objective values (when COMPLETE) and the attributes to store."""

    status: str
    values: tuple[float, float] | None = None
    error: str | None = None
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def state(self) -> str:
        """The Optuna state name: ``COMPLETE``, ``PRUNED`` or ``FAIL``."""
        return STATES[self.status]


def classify(run: ChildRun, memory_capped: bool) -> TrialOutcome:
    """Decide the outcome of a child run; pure, so every path is unit-testable. Across hosts,
    the error names the rank it happened on."""
    outcome = _classify(run, memory_capped)
    if run.rank and outcome.error:
        return replace(outcome, error=f"{outcome.error} (on {run.rank})")
    return outcome


def _classify(run: ChildRun, memory_capped: bool) -> TrialOutcome:
    timing = {"wall_s": run.wall_s}
    if run.timed_out:
        return TrialOutcome(
            "timeout",
            error=f"no result after {run.wall_s:.0f} s; killed",
            attrs={"timings": timing},
        )
    read = read_result(run.result_text)
    if not isinstance(read, Result):
        if read is None:
            return _without_result(run, memory_capped, garbage=run.result_text is not None)
        return TrialOutcome("error", error=read, attrs={"timings": timing})
    # The payload's names are the stored attributes'; the timings are broken down by phase.
    measured = {**read.payload, "timings": read.timings}
    attrs = {key: measured[key] for key in _RESULT_ATTRS if measured.get(key) is not None}
    attrs["timings"] = breakdown(run, read.timings)
    return _by_status(read, attrs)


def ok_payload(run: ChildRun, *, memory_capped: bool, failed: str) -> dict[str, Any]:
    """A one-off child's payload when it ended ``ok``; else :class:`WorkloadError` (a refused
    workload) or :class:`TunerError` (``"<failed> (<status>): <error>"``)."""
    read = read_result(run.result_text)
    if isinstance(read, Result) and read.status == "ok":
        return dict(read.payload)
    if isinstance(read, Result) and read.status == "invalid":
        raise WorkloadError(str(read.error))
    outcome = classify(run, memory_capped=memory_capped)
    raise TunerError(f"{failed} ({outcome.status}): {outcome.error}")


def read_result(text: str | None) -> Result | str | None:
    """The result a child left, the line that says why it cannot be read, or ``None`` when there
    is none or it is not JSON (the child died writing it)."""
    if text is None:
        return None
    try:
        return decode_result(text)
    except NotJSONError:
        return None
    except ProtocolVersionError as exc:
        return str(exc)
    except ProtocolError as exc:
        return f"the child left a result this driver cannot read: {exc}"


def _by_status(result: Result, attrs: dict[str, Any]) -> TrialOutcome:
    """The outcome a readable result says, by its status."""
    status, payload = result.status, result.payload
    error = (result.error or "")[:1000]
    if status == "ok" and payload.get("probe"):  # a probe run measures nothing: it fitted
        return TrialOutcome("ok", attrs=attrs)
    if status == "ok":
        loss, throughput = _finite(payload.get("final_loss")), _finite(payload.get("throughput"))
        if loss is None or throughput is None or throughput <= 0:
            return TrialOutcome(
                "error",
                error=f"bad measurement: loss {payload.get('final_loss')}, "
                f"throughput {payload.get('throughput')}",
                attrs=attrs,
            )
        return TrialOutcome("ok", values=(loss, throughput), attrs=attrs)
    if status in ("oom", "diverged", "dominated", "error"):
        return TrialOutcome(status, error=error, attrs=attrs)
    if status == "invalid":
        return TrialOutcome("error", error=error, attrs=attrs)
    return TrialOutcome("error", error=f"unknown result status {status!r}", attrs=attrs)


PHASES: tuple[str, ...] = (
    "process_start_s",
    "import_s",
    "device_init_s",
    "build_s",
    "tracing_s",
    "training_s",
    "noise_scale_s",
    "evaluate_s",
    "input_probe_s",
    "handback_s",
)


OUTSIDE_WALL: tuple[str, ...] = ("import_hidden_s",)
"""Times a child reports outside its wall (a warm child's import before its request): stored,
never summed with the phases."""


def breakdown(run: ChildRun, child: Mapping[str, Any]) -> dict[str, float]:
    """Where a trial's wall time went, phase by phase: ``process_start_s`` from the spawn (or
    hand-over) to the child's first line, ``handback_s`` from its last line to the parent holding
    the result, ``unaccounted_s`` what no phase measured; :data:`OUTSIDE_WALL` times beside."""
    phases = {k: float(v) for k, v in child.items() if k in PHASES or k in OUTSIDE_WALL}
    if run.spawned_at is not None and "child_started_at" in child:
        phases["process_start_s"] = float(child["child_started_at"]) - run.spawned_at
    if run.ended_at is not None and "child_finished_at" in child:
        phases["handback_s"] = run.ended_at - float(child["child_finished_at"])
    phases["wall_s"] = run.wall_s
    phases["unaccounted_s"] = run.wall_s - sum(phases.get(k, 0.0) for k in PHASES)
    return phases


def _without_result(run: ChildRun, memory_capped: bool, garbage: bool) -> TrialOutcome:
    # The last real error line: TensorFlow's logging, which often ends the tail, says nothing.
    how, tail = _describe_exit(run.returncode), last_message(run.stderr_tail)[:300]
    if is_probable_oom(run.returncode, run.stderr_tail, memory_capped):
        status, error = "oom", f"{how} under a memory cap or with an out-of-memory message: {tail}"
    elif run.returncode < 0:
        status, error = "crashed", f"{how}: {tail}"
    elif garbage:
        status, error = "error", f"{how} and left a result that is not JSON"
    else:
        status, error = "error", f"{how} without a result: {tail}"
    return TrialOutcome(status, error=error.rstrip(": "), attrs={"timings": {"wall_s": run.wall_s}})


def _describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"child died by {name}"
    return f"child exited with code {returncode}"


def _finite(value: Any) -> float | None:
    """``value`` as a float when it is a finite number, else ``None``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None
