"""Inside the child: one trial of the search (mode ``trial``) — train, then measure: validation
loss, steady-state throughput, the input pipeline alone, memory peaks, the noise scale, and with
a loss target the time to it (:mod:`tuner.worker.target`). Backend-neutral.
"""

from __future__ import annotations

import math
import resource
import time
from collections.abc import Callable
from typing import Any

from tuner.core import dominance
from tuner.core.objective import DEFAULT_OBJECTIVE, is_validation, logged_name
from tuner.core.protocol import Result, TrialRequest
from tuner.core.target import CheckPlan
from tuner.core.windows import is_input_bound, summarise, warmup_windows
from tuner.worker.backends import open_session
from tuner.worker.meters import Emit, auto_noise_steps
from tuner.worker.noise import GuardedNoise, guarded
from tuner.worker.session import Session, hold_until_exit, peak_memory_bytes, summary, train
from tuner.worker.sources import FUNCTION
from tuner.worker.target import TargetCheck


def run_trial(request: TrialRequest, emit: Emit) -> Result:
    """Train one trial and measure it: ``ok`` or ``diverged``; raises on failure."""
    session = open_session(request, emit)
    mark = time.perf_counter()
    noise = _noise_meter(request, session)
    # Building the meter starts its own input pipeline: part of what the noise scale costs.
    noise_setup_s = time.perf_counter() - mark
    check = _target_check(session)
    hold_until_exit(session, noise, check)
    train(session, noise, check)
    if noise is not None:
        session.timings["noise_scale_s"] += noise_setup_s
    result = {**summary(session), **_noise_fields(request, session, noise)}
    meter = session.meter
    if check is not None:
        result.update(check.fields(meter.epoch_seconds))
        # It may stop early: the windows it trained, not the budget's.
        result["windows"] = len(meter.epoch_seconds)
        result["train_samples_used"] = len(meter.epoch_seconds) * session.steps * session.batch
    if meter.diverged_at is not None:
        meter.windows_done()
        error = f"training loss became {meter.losses[-1]} in epoch {meter.diverged_at}"
        return Result(status="diverged", error=error, payload=result, timings=session.timings)
    # The warm-up windows (tracing, compilation) are left out, unless the run has only one.
    warm = warmup_windows(meter.epoch_seconds)
    steady = summarise(session.steps * session.batch, meter.epoch_seconds[warm:])
    result.update(_input_fields(session, steady.median))
    # Every rate is measured: the next child may start importing beside the evaluation.
    meter.windows_done()
    # With a target, the last check evaluated the trained model: not evaluated twice.
    final_loss = check.final_loss if check is not None else _validation_loss(session)
    if metrics := _val_metrics(session):
        result["val_metrics"] = metrics
    result.update(
        final_loss=final_loss,
        train_loss=meter.losses[-1],
        throughput=steady.median,
        throughput_spread=steady.spread,
        warmup_windows=warm,
        window_throughputs=list(steady.windows),
        peak_memory_bytes=peak_memory_bytes(session),
        peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    )
    if not math.isfinite(final_loss):
        objective = session.request.workload.objective
        what = "validation loss" if objective == DEFAULT_OBJECTIVE else objective
        error = f"{what} is {final_loss}"
        return Result(status="diverged", error=error, payload=result, timings=session.timings)
    if check is not None and check.dominance is not None:
        evidence = result["dominance"]
        error = dominance.describe(
            evidence, evidence.get("reference_trial"), evidence["budget_samples"]
        )
        return Result(status="dominated", error=error, payload=result, timings=session.timings)
    return Result(status="ok", payload=result, timings=session.timings)


def _validation_loss(session: Session) -> float:
    """The trained model's validation loss, timed as ``evaluate_s``."""
    mark = time.perf_counter()
    loss = _evaluator(session)()
    session.timings["evaluate_s"] = time.perf_counter() - mark
    return loss


def _val_metrics(session: Session) -> dict[str, float]:
    """The last evaluation's figures besides the loss and the objective (``accuracy``)."""
    shown = {"loss", logged_name(session.request.workload.objective)}
    return {name: value for name, value in session.val_logs.items() if name not in shown}


def _evaluator(session: Session) -> Callable[[], float]:
    """What evaluates the model as it is now on the fixed validation set, or reads the last epoch's
    loss where the objective is the training loss."""
    if not is_validation(session.request.workload.objective):
        losses = session.meter.losses
        return lambda: float(losses[-1]) if losses else math.nan
    return session.backend.evaluator(session)


def _target_check(session: Session) -> TargetCheck | None:
    """The check after each window of the loss target, or with early stopping of the trial's own
    windows (``None``: neither)."""
    request = session.request
    stop = request.early_stop if isinstance(request, TrialRequest) else None
    checks = session.checks
    if checks is None and stop is not None:
        checks = CheckPlan(session.steps * session.batch, session.steps, session.windows)
    if checks is None:
        return None
    target = request.target.loss if request.target is not None else None
    return TargetCheck(checks, target, _evaluator(session), stop, session.meter.epoch_seconds)


def _input_fields(session: Session, throughput: float) -> dict[str, Any]:
    """The input pipeline alone (unless the driver passed its figure) and whether training reached
    80 % of it."""
    given = session.request.input_throughput if isinstance(session.request, TrialRequest) else None
    mark = time.perf_counter()
    alone = session.backend.input_throughput(session) if given is None else given
    session.timings["input_probe_s"] = time.perf_counter() - mark
    val_size, val_samples = session.source.val_size, session.request.budget.val_samples
    known = [v for v in (val_size, val_samples) if v is not None]
    return {
        "input_throughput": alone,
        "input_bound": is_input_bound(throughput, alone),
        "val_samples_used": min(known) if known else None,
    }


def _noise_meter(request: TrialRequest, session: Session) -> GuardedNoise | None:
    """The gradient-noise-scale meter of a trial with 2+ replicas, guarded: what it cannot
    measure is skipped with the reason, never an error."""
    if not request.noise_scale or session.plan.num_replicas < 2 or request.loop not in NOISE_LOOPS:
        return None
    steps = request.noise_scale_steps or auto_noise_steps(session.steps)
    return guarded(lambda: session.backend.noise_meter(session, steps))


def _why_no_noise_scale(session: Session) -> str:
    if session.plan.num_replicas < 2:
        return "the gradient noise scale needs at least 2 replicas"
    if session.source.form == FUNCTION:
        return (
            "the gradient noise scale needs batches drawn apart from training; a dataset "
            "function's stream is sharded per replica, so it is not measured"
        )
    return "the gradient noise scale is measured with loop = fit or custom"


NOISE_LOOPS = ("fit", "custom")


def _noise_fields(
    request: TrialRequest, session: Session, noise: GuardedNoise | None
) -> dict[str, Any]:
    """The noise scale's result fields, or why it was not measured (``noise_scale_skipped``)."""
    if noise is None:
        return {"noise_scale_note": _why_no_noise_scale(session)} if request.noise_scale else {}
    note = noise.stopped or noise.scale.why_none
    fields: dict[str, Any] = {"noise_scale_note": note} if note else {}
    if noise.skipped:
        fields["noise_scale_skipped"] = noise.skipped
    fields.update(
        gradient_noise_scale=noise.scale.value,
        gradient_noise_scale_per_epoch=noise.scale.history,
        noise_scale_steps=noise.measured_steps,
    )
    return fields
