"""From trials to a recommendation: pure functions over Optuna ``FrozenTrial`` objects.

Policy (``loss-then-throughput``): among COMPLETE trials, keep those whose final validation loss
is within ``tolerance`` (default 2 %) of the best one; of those, take the highest throughput (ties
go to the smaller global batch). Duplicated grid points (several workers can run the same one at
the end of a grid) count once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from optuna.trial import FrozenTrial, TrialState

from tuner.core.errors import NoCompleteTrialError
from tuner.core.hyperparams import config_key, defaults, snippet
from tuner.core.policy import DEFAULT_TOLERANCE, POLICY

"""``loss-then-throughput``: the fastest trial within the loss tolerance of the best; ``goodput``:
among the same candidates, the highest goodput (throughput × statistical efficiency)."""
INFEASIBLE = ("oom", "oom-implied")
"""Statuses of a global batch that does not fit: measured, or implied by a smaller one."""
_PER_SIGNATURE_KEYS = (
    "trial_number",
    "global_batch_size",
    "per_replica_batch_size",
    "num_replicas",
    "learning_rate",
    "lr_rule",
    "throughput",
    "final_loss",
    "largest_feasible_batch_size",
    "oom_batch_sizes",
    "speedup_vs_single_device",
    "model_hyperparameters",
    "gradient_noise_scale",
    "goodput",
)


def status_of(trial: FrozenTrial) -> str:
    """The tuner status of a trial (``running`` while it runs, ``unknown`` if never set)."""
    if trial.state == TrialState.RUNNING:
        return "running"
    return str(trial.user_attrs.get("status", "unknown"))


def grid_point(trial: FrozenTrial) -> tuple[Any, Any]:
    """The ``(global_batch_size, lr_rule)`` a trial ran."""
    return (trial.params.get("global_batch_size"), trial.params.get("lr_rule"))


def model_config(trial: FrozenTrial) -> str:
    """The trial's model hyperparameters as a stable key (``{}`` for a plain model)."""
    return config_key(trial.user_attrs.get("model_hyperparameters") or {})


def unique_trials(trials: Iterable[FrozenTrial]) -> list[FrozenTrial]:
    """One trial per grid point (and model configuration): the first COMPLETE one, else the
    latest finished, else any. Trials that never got their parameters (killed at birth) are
    left out."""

    def rank(trial: FrozenTrial) -> tuple[int, int]:
        if trial.state == TrialState.COMPLETE:
            return (0, trial.number)
        if trial.state.is_finished():
            return (1, -trial.number)
        return (2, -trial.number)

    best: dict[tuple[Any, Any, str], FrozenTrial] = {}
    for trial in trials:
        point = grid_point(trial)
        if None in point:  # killed before its parameters were stored: not a grid point
            continue
        key = (*point, model_config(trial))
        if key not in best or rank(trial) < rank(best[key]):
            best[key] = trial
    return sorted(best.values(), key=lambda t: t.number)


def infeasible_batch_sizes(trials: Iterable[FrozenTrial]) -> list[int]:
    """Global batch sizes known to run out of memory (measured or implied), ascending."""
    return sorted(
        {
            int(t.params["global_batch_size"])
            for t in trials
            if status_of(t) in INFEASIBLE and "global_batch_size" in t.params
        }
    )


def smallest_oom_batch(
    trials: Iterable[FrozenTrial], signature: str | None = None, config: str | None = None
) -> int | None:
    """The smallest global batch that really ran out of memory (on ``signature``'s devices, and
    with the model configuration ``config`` of :func:`model_config`, when given)."""
    sizes = [
        int(t.params["global_batch_size"])
        for t in trials
        if status_of(t) == "oom"
        and (signature is None or t.user_attrs.get("device_signature") == signature)
        and (config is None or model_config(t) == config)
    ]
    return min(sizes) if sizes else None


def recommend(
    trials: Sequence[FrozenTrial],
    *,
    study_name: str,
    base_lr: float,
    base_batch_size: int,
    versions: dict[str, str],
    created_at: str,
    tolerance: float = DEFAULT_TOLERANCE,
    baselines: dict[str, dict[str, Any]] | None = None,
    probes: dict[str, dict[str, Any]] | None = None,
    hypermodel: dict[str, Any] | None = None,
    policy: str = POLICY,
) -> dict[str, Any]:
    """Return the recommended-config JSON (a dict) for ``trials``.

    Throughput is only comparable between identical devices, so trials are grouped by
    ``device_signature`` (device model, count and memory cap) and each group gets its own
    recommendation, listed under ``per_device_signature``; the top level is the group with the
    most COMPLETE trials, and a ``note`` says so when there are several. ``baselines`` and
    ``probes`` map a device signature to the study's single-device baseline and probe records.
    Speedup is the chosen trial's throughput over the baseline's (one device, base batch);
    scaling efficiency is the speedup per replica (1.0 is ideal). Raises
    :class:`NoCompleteTrialError` when no trial completed with a finite loss.
    """
    context = _Context(
        study_name,
        base_lr,
        base_batch_size,
        versions,
        created_at,
        tolerance,
        baselines,
        probes,
        hypermodel,
        policy,
    )
    groups = _by_signature(trials)
    usable = _usable_signatures(groups, study_name)
    per_signature = {sig: _recommend_one(groups[sig], context) for sig in usable}
    return _with_other_signatures(per_signature, usable)


def _by_signature(trials: Iterable[FrozenTrial]) -> dict[str, list[FrozenTrial]]:
    groups: dict[str, list[FrozenTrial]] = {}
    for trial in trials:  # grid points are unique within a signature, not across signatures
        signature = str(trial.user_attrs.get("device_signature", "unknown"))
        groups.setdefault(signature, []).append(trial)
    return groups


def _usable_signatures(groups: dict[str, list[FrozenTrial]], study_name: str) -> list[str]:
    """The signatures with a COMPLETE trial, the one with the most first."""
    counts = {sig: sum(map(is_complete, unique_trials(group))) for sig, group in groups.items()}
    usable = sorted((sig for sig, n in counts.items() if n), key=lambda sig: (-counts[sig], sig))
    if not usable:
        raise NoCompleteTrialError(
            f"study {study_name!r} has no COMPLETE trial yet; run `tuner search` first"
        )
    return usable


def _with_other_signatures(
    per_signature: dict[str, dict[str, Any]], usable: list[str]
) -> dict[str, Any]:
    """The first signature's recommendation, with every signature's summary beside it."""
    result = dict(per_signature[usable[0]])
    result["per_device_signature"] = {
        sig: {key: rec.get(key) for key in _PER_SIGNATURE_KEYS}
        for sig, rec in per_signature.items()
    }
    if len(usable) > 1:
        notes = [
            f"trials ran on {len(usable)} device signatures ({'; '.join(usable)}) whose "
            "throughput is not comparable: each has its own recommendation under "
            f"per_device_signature; this one is for {usable[0]} (most completed trials)"
        ]
        result["note"] = "; ".join([*notes, *([result["note"]] if "note" in result else [])])
    return result


def is_complete(trial: FrozenTrial) -> bool:
    """Whether a trial COMPLETEd with finite values (a recommendation can stand on it)."""
    return bool(
        trial.state == TrialState.COMPLETE
        and trial.values
        and all(map(math.isfinite, trial.values))
    )


@dataclass(frozen=True)
class _Context:
    """What every per-signature recommendation of one study shares."""

    study_name: str
    base_lr: float
    base_batch_size: int
    versions: dict[str, str]
    created_at: str
    tolerance: float
    baselines: dict[str, dict[str, Any]] | None
    probes: dict[str, dict[str, Any]] | None
    hypermodel: dict[str, Any] | None
    policy: str


def _recommend_one(trials: Sequence[FrozenTrial], context: _Context) -> dict[str, Any]:
    """The recommendation among ``trials``, which all ran on one device signature."""
    unique = unique_trials(trials)
    complete = [t for t in unique if is_complete(t)]
    candidates = _within_tolerance(complete, context.tolerance)
    chosen = _choose(candidates, context)
    # Feasibility belongs to one model: in a joint search, the chosen trial's configuration.
    same_model = [t for t in unique if model_config(t) == model_config(chosen)]
    result = {
        **_chosen_fields(chosen, context, candidates, _feasibility(same_model, complete)),
        **_speedup(chosen, context),
        **_hypermodel_fields(chosen, context),
        **_probe_fields(chosen, context),
    }
    note = _oom_note(result, same_model)
    if note:
        result["note"] = note
    return result


def _within_tolerance(complete: list[FrozenTrial], tolerance: float) -> list[FrozenTrial]:
    """The trials whose final loss is within ``tolerance`` (relative) of the best one."""
    best_loss = min(t.values[0] for t in complete)
    threshold = best_loss + tolerance * abs(best_loss)
    return [t for t in complete if t.values[0] <= threshold]


def _choose(candidates: list[FrozenTrial], context: _Context) -> FrozenTrial:
    """The policy's pick: the highest throughput (or goodput), the smaller batch on ties."""
    if context.policy != "goodput":
        return max(candidates, key=lambda t: (t.values[1], -t.params["global_batch_size"]))
    scored = [t for t in candidates if t.user_attrs.get("goodput") is not None]
    if not scored:
        raise NoCompleteTrialError(
            f"study {context.study_name!r} has no trial with a measured gradient noise scale "
            "(it needs 2+ replicas and noise_scale = true), so no goodput; use the default "
            "policy"
        )
    return max(scored, key=lambda t: (t.user_attrs["goodput"], -t.params["global_batch_size"]))


def _chosen_fields(
    chosen: FrozenTrial,
    context: _Context,
    candidates: list[FrozenTrial],
    feasibility: dict[str, Any],
) -> dict[str, Any]:
    attrs = chosen.user_attrs
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
        **feasibility,
        "policy": context.policy,
        # The critical batch is estimated by the noise scale itself (shown as such by the views).
        "gradient_noise_scale": attrs.get("gradient_noise_scale"),
        "statistical_efficiency": attrs.get("statistical_efficiency"),
        "goodput": attrs.get("goodput"),
        "input_throughput": attrs.get("input_throughput"),
        "input_bound": attrs.get("input_bound"),
        "train_samples_used": attrs.get("train_samples_used"),
        "val_samples_used": attrs.get("val_samples_used"),
        "loss_tolerance": context.tolerance,
        "candidates": [t.number for t in sorted(candidates, key=lambda t: t.number)],
        "versions": dict(context.versions),
        "created_at": context.created_at,
    }


def _feasibility(same_model: list[FrozenTrial], complete: list[FrozenTrial]) -> dict[str, Any]:
    feasible = max(int(t.params["global_batch_size"]) for t in complete if t in same_model)
    return {
        "largest_feasible_batch_size": feasible,
        "oom_batch_sizes": infeasible_batch_sizes(same_model),
    }


def _speedup(chosen: FrozenTrial, context: _Context) -> dict[str, Any]:
    """Throughput over the single-device baseline's on the same devices, and per replica."""
    signature = chosen.user_attrs.get("device_signature")
    baseline = (context.baselines or {}).get(str(signature), {})
    base_throughput = baseline.get("throughput")
    if context.hypermodel and model_config(chosen) != config_key(
        defaults(context.hypermodel["space"])
    ):
        base_throughput = None  # the baseline trained the hypermodel's defaults: another model
    speedup = chosen.values[1] / base_throughput if base_throughput else None
    replicas = int(chosen.user_attrs["num_replicas"])
    return {
        "baseline_throughput": base_throughput,
        "speedup_vs_single_device": speedup,
        "scaling_efficiency": speedup / replicas if speedup else None,
    }


def _hypermodel_fields(chosen: FrozenTrial, context: _Context) -> dict[str, Any]:
    values = chosen.user_attrs.get("model_hyperparameters")
    if values is None or not context.hypermodel:
        return {}
    return {
        "model_hyperparameters": dict(values),
        "keras_tuner_snippet": snippet(
            context.hypermodel["reference"], context.hypermodel["kind"], values
        ),
    }


def _probe_fields(chosen: FrozenTrial, context: _Context) -> dict[str, Any]:
    probe = (context.probes or {}).get(str(chosen.user_attrs.get("device_signature")))
    if not probe:
        return {}
    keys = ("largest_fitting_batch", "smallest_oom_batch", "resolution", "launches")
    return {"probe": {key: probe.get(key) for key in keys}}


def _oom_note(result: dict[str, Any], same_model: list[FrozenTrial]) -> str | None:
    """Why the recommendation stops short of the grid's largest batch, if it does."""
    feasible, infeasible = result["largest_feasible_batch_size"], result["oom_batch_sizes"]
    largest_grid = max(int(t.params["global_batch_size"]) for t in same_model)
    if not infeasible or feasible >= largest_grid:
        return None
    return (
        f"global batch {infeasible[0]} and larger ran out of memory; the largest that fits is "
        f"{feasible} ({feasible // result['num_replicas']} per replica)"
    )
