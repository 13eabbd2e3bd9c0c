"""The fields of one device signature's recommendation, from its chosen trial and context: each
function returns a group of the JSON's flat keys (docs/reference/json.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from optuna.trial import FrozenTrial

from tuner.core.batch_model import prediction_from_trials
from tuner.core.configurations import (
    feasibility_by_precision,
    is_same_as,
    model_config,
    precision_of,
    runs_of,
    throughput_ci,
    time_to_target_ci,
)
from tuner.core.hyperparams import config_key, defaults, snippet
from tuner.core.recommend import DEFAULT_TIE_MARGIN
from tuner.core.recommend._candidates import Tolerance
from tuner.core.recommend._ties import Pick
from tuner.core.recommend._verdict import Speedup, baseline_at, measure_speedup
from tuner.core.record import decode


@dataclass(frozen=True)
class Context:
    """What every per-signature recommendation of one study shares."""

    study_name: str
    base_lr: float
    base_batch_size: int
    versions: dict[str, str]
    created_at: str
    tolerance: float
    """``--tolerance``: the floor of the loss tolerance (seed noise may raise it)."""
    baselines: dict[str, dict[str, Any]] | None
    probes: dict[str, dict[str, Any]] | None
    hypermodel: dict[str, Any] | None
    policy: str
    target_loss: float | None = None
    seed_noise: dict[str, dict[str, Any]] | None = None
    tie_margin: float = DEFAULT_TIE_MARGIN


def chosen_fields(
    chosen: FrozenTrial,
    context: Context,
    candidates: list[FrozenTrial],
    same_model: list[FrozenTrial],
) -> dict[str, Any]:
    """What the chosen trial is and measured, and the settings it was chosen with."""
    attrs = decode(chosen).flat
    largest, infeasible = feasibility_by_precision(same_model)
    return {
        "study_name": context.study_name,
        "trial_number": chosen.number,
        "global_batch_size": int(chosen.params["global_batch_size"]),
        "per_replica_batch_size": int(attrs["per_replica_batch_size"]),
        "num_replicas": int(attrs["num_replicas"]),
        "devices": list(attrs.get("devices", [])),
        "device_signature": attrs.get("device_signature"),
        "learning_rate": float(attrs["learning_rate"]),
        "lr_rule": str(chosen.params["lr_rule"]),
        "base_lr": context.base_lr,
        "base_batch_size": context.base_batch_size,
        "throughput": float(chosen.values[1]),
        "final_loss": float(chosen.values[0]),
        "train_loss": attrs.get("train_loss"),
        "largest_feasible_batch_size": largest[precision_of(chosen)],
        "oom_batch_sizes": infeasible[precision_of(chosen)],
        "policy": context.policy,
        # The critical batch is estimated by the noise scale itself (shown as such by the views).
        "gradient_noise_scale": attrs.get("gradient_noise_scale"),
        "statistical_efficiency": attrs.get("statistical_efficiency"),
        "goodput": attrs.get("goodput"),
        "input_throughput": attrs.get("input_throughput"),
        "input_bound": attrs.get("input_bound"),
        "train_samples_used": attrs.get("train_samples_used"),
        "val_samples_used": attrs.get("val_samples_used"),
        "candidates": [t.number for t in sorted(candidates, key=lambda t: t.number)],
        "versions": dict(context.versions),
        "created_at": context.created_at,
    }


def decision_fields(chosen: FrozenTrial, decision: Pick, tolerance: Tolerance) -> dict[str, Any]:
    """How sure the pick is: its interval, runs, loss tolerance, ties and close calls."""
    interval = throughput_ci(decode(chosen).flat)
    return {
        "throughput_ci": None if interval is None else interval.as_list(),
        "throughput_ci_method": None if interval is None else interval.method,
        "runs": runs_of(chosen),
        "loss_tolerance": tolerance.applied,
        "loss_tolerance_source": tolerance.source,
        "seed_loss_spread": tolerance.seed_spread,
        "seed_final_losses": tolerance.seed_final_losses,
        "tied_with": list(decision.tied_with),
        "tie_rule": decision.rule,
        "tie_margin": decision.margin,
        "close_calls": [call.record() for call in decision.close],
    }


def precision_fields(chosen: FrozenTrial, same_model: list[FrozenTrial]) -> dict[str, Any]:
    """The precision (Keras dtype policy) the chosen trial trained under, and per precision of
    its model the largest global batch that completed in one step (not by gradient accumulation;
    ``None`` when none did) and the sizes known not to fit: the flat
    ``largest_feasible_batch_size`` and ``oom_batch_sizes`` are those of the chosen precision."""
    largest, infeasible = feasibility_by_precision(same_model)
    return {
        "precision": precision_of(chosen),
        "largest_feasible_batch_size_by_precision": largest,
        "oom_batch_sizes_by_precision": infeasible,
    }


def speedup_of(chosen: FrozenTrial, context: Context) -> Speedup:
    """The chosen trial's speedup over its device signature's single-device baseline at its
    precision (like with like: bf16's own gain is not the replicas')."""
    signature = str(decode(chosen).configuration.device_signature)
    precision = precision_of(chosen)
    baseline = baseline_at(context.baselines, signature, precision)
    # A hypermodel's baseline trained its defaults: another model unless the chosen is it.
    other_model = bool(context.hypermodel) and model_config(chosen) != config_key(
        defaults((context.hypermodel or {})["space"])
    )
    return measure_speedup(
        float(chosen.values[1]),
        throughput_ci(decode(chosen).flat),
        int(decode(chosen).configuration.num_replicas or 1),
        baseline,
        other_model=other_model,
        precision=precision,
    )


def target_fields(
    chosen: FrozenTrial, context: Context, same_model_complete: Sequence[FrozenTrial]
) -> dict[str, Any]:
    """With a target loss: the time and samples to it, and the batch-size model's prediction."""
    if context.target_loss is None:
        return {}
    attrs = decode(chosen).flat
    interval = time_to_target_ci(attrs)
    measured = [t for t in same_model_complete if not is_same_as(t)]
    return {
        "target_loss": context.target_loss,
        "reached_target": attrs.get("reached_target"),
        "time_to_target_s": attrs.get("time_to_target_s"),
        "time_to_target_ci": None if interval is None else interval.as_list(),
        "samples_to_target": attrs.get("samples_to_target"),
        "prediction": prediction_from_trials(measured),
    }


def hypermodel_fields(chosen: FrozenTrial, context: Context) -> dict[str, Any]:
    values = decode(chosen).configuration.model_hyperparameters
    if values is None or not context.hypermodel:
        return {}
    return {
        "model_hyperparameters": dict(values),
        "keras_tuner_snippet": snippet(
            context.hypermodel["reference"], context.hypermodel["kind"], values
        ),
    }


def probe_fields(chosen: FrozenTrial, context: Context) -> dict[str, Any]:
    probe = (context.probes or {}).get(str(decode(chosen).configuration.device_signature))
    if not probe:
        return {}
    # The probe runs at the spec's first precision: it says which, for a pick at another one.
    keys = ("largest_fitting_batch", "smallest_oom_batch", "resolution", "launches", "precision")
    return {"probe": {key: probe.get(key) for key in keys}}


def oom_note(result: dict[str, Any], same_model: list[FrozenTrial]) -> str | None:
    """Why the recommendation stops short of the grid's largest batch, if it does."""
    feasible, infeasible = result["largest_feasible_batch_size"], result["oom_batch_sizes"]
    largest_grid = max(int(t.params["global_batch_size"]) for t in same_model)
    if not infeasible or feasible is None or feasible >= largest_grid:
        return None  # no size fit in one step: the accumulation line says what was reached
    return (
        f"global batch {infeasible[0]} and larger ran out of memory; the largest that fits is "
        f"{feasible} ({feasible // result['num_replicas']} per replica)"
    )
