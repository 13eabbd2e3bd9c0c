"""One trial's lines of the search progress, for both trackers of :mod:`tuner.console.progress`."""

from __future__ import annotations

from typing import Any

from tuner.core.outcome import TrialOutcome
from tuner.core.progress import clipped, format_duration, format_eta
from tuner.core.protocol import EpochEvent, ProgressEvent

FAILED = frozenset({"error", "crashed", "timeout", "interrupted"})
"""Statuses that are a failure of the run, not a finding (logged as warnings: ``-q`` keeps them)."""
_ERROR_WIDTH = 240


def configuration(params: dict[str, Any], precision: bool = False) -> list[str]:
    """What a trial runs, as line parts: ``batch 128 (64/replica)``, ``rule linear``, ..."""
    parts = [
        f"batch {params['global_batch_size']} ({params['per_replica_batch_size']}/replica)",
        f"rule {params['lr_rule']}",
    ]
    if precision and params.get("precision"):
        parts.append(f"precision {params['precision']}")
    values = params.get("model_hyperparameters")
    if values:
        parts.append("model " + " ".join(f"{key}={value}" for key, value in values.items()))
    return parts


def result_parts(outcome: TrialOutcome) -> list[str]:
    """What a trial found: throughput, validation and training loss; or its short error."""
    if outcome.values is not None:
        final_loss, throughput = outcome.values
        parts = [f"{outcome.attrs.get('run_throughput', throughput):,.0f} samples/s"]
        runs = outcome.attrs.get("repeats") or []
        if len(runs) > 1:  # this run's own figure, then what the configuration stands at
            parts.append(f"median of {len(runs)} runs {throughput:,.0f}")
        parts.append(f"val loss {final_loss:.4g}")
        train = outcome.attrs.get("train_loss")
        if isinstance(train, int | float):
            parts.append(f"train loss {train:.4g}")
        return parts
    error = (outcome.error or "").strip().splitlines()
    if not error:
        return []
    return [clipped(error[0], _ERROR_WIDTH)]


def short_configuration(params: dict[str, Any], precision: bool = False) -> list[str]:
    """What a trial runs, for a bar's narrow description: ``batch 128``, ``rule linear``."""
    parts = [f"batch {params['global_batch_size']}", f"rule {params['lr_rule']}"]
    if precision and params.get("precision"):
        parts.append(str(params["precision"]))
    return parts


def start_parts(
    number: int, position: int, total: int, params: dict[str, Any], precision: bool = False
) -> tuple[str, list[str]]:
    """``trial 3 started:`` and ``batch 128 (64/replica) · rule linear · lr 0.002 · 2 of 6``
    (with ``precision``, ``precision mixed_bfloat16`` after the rule)."""
    parts = [
        *configuration(params, precision),
        f"lr {params['learning_rate']:.3g}",
        f"{position} of {total}",
    ]
    return f"trial {number} started:", parts


def end_parts(
    number: int,
    params: dict[str, Any] | None,
    outcome: TrialOutcome,
    seconds: float | None,
    eta: float | None,
    precision: bool = False,
) -> tuple[str, list[str]]:
    """``trial 3 ok:`` and ``batch 128 (64/replica) · rule linear · 21,687 samples/s · val loss
    0.004024 · train loss 0.004941 · 31 s · ETA 2 min`` (with ``precision``, the trial's after
    the rule)."""
    parts = [*(configuration(params, precision) if params else []), *result_parts(outcome)]
    if seconds is not None:
        parts.append(format_duration(seconds))
    parts.append(format_eta(eta))
    return f"trial {number} {outcome.status}:", parts


def progress_parts(
    number: int, event: EpochEvent | ProgressEvent, seconds: float
) -> tuple[str, list[str]]:
    """``trial 3:`` and ``2,048/4,096 samples (50%) · epoch 2/6 · loss 0.0123 · 12 s in``."""
    done, total = event.samples, event.total_samples
    parts = [f"{done:,}/{total:,} samples ({done / total:.0%})" if total else f"{done:,} samples"]
    if isinstance(event, EpochEvent):
        parts.append(f"epoch {event.epoch}/{event.epochs}")
        parts.append(f"loss {event.loss:.4g}")
    parts.append(f"{format_duration(seconds)} in")
    return f"trial {number}:", parts
