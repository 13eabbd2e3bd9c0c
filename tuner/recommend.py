"""From trials to a recommendation: pure functions over Optuna ``FrozenTrial`` objects.

Policy (``loss-then-throughput``): among COMPLETE trials, keep those whose final validation loss
is within ``tolerance`` (default 2 %) of the best one; of those, take the highest throughput (ties
go to the smaller global batch). Duplicated grid points (several workers can run the same one at
the end of a grid) count once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from optuna.trial import FrozenTrial, TrialState

from tuner.errors import NoCompleteTrialError

DEFAULT_TOLERANCE = 0.02
POLICY = "loss-then-throughput"
_INFEASIBLE = ("oom", "oom-implied")


def status_of(trial: FrozenTrial) -> str:
    """The tuner status of a trial (``running`` while it runs, ``unknown`` if never set)."""
    if trial.state == TrialState.RUNNING:
        return "running"
    return str(trial.user_attrs.get("status", "unknown"))


def grid_point(trial: FrozenTrial) -> tuple[Any, Any]:
    """The ``(global_batch_size, lr_rule)`` a trial ran."""
    return (trial.params.get("global_batch_size"), trial.params.get("lr_rule"))


def unique_trials(trials: Iterable[FrozenTrial]) -> list[FrozenTrial]:
    """One trial per grid point: the first COMPLETE one, else the latest finished, else any.
    Trials that never got their parameters (killed at birth) are left out."""

    def rank(trial: FrozenTrial) -> tuple[int, int]:
        if trial.state == TrialState.COMPLETE:
            return (0, trial.number)
        if trial.state.is_finished():
            return (1, -trial.number)
        return (2, -trial.number)

    best: dict[tuple[Any, Any], FrozenTrial] = {}
    for trial in trials:
        key = grid_point(trial)
        if None in key:  # killed before its parameters were stored: not a grid point
            continue
        if key not in best or rank(trial) < rank(best[key]):
            best[key] = trial
    return sorted(best.values(), key=lambda t: t.number)


def infeasible_batch_sizes(trials: Iterable[FrozenTrial]) -> list[int]:
    """Global batch sizes known to run out of memory (measured or implied), ascending."""
    return sorted(
        {
            int(t.params["global_batch_size"])
            for t in trials
            if status_of(t) in _INFEASIBLE and "global_batch_size" in t.params
        }
    )


def smallest_oom_batch(trials: Iterable[FrozenTrial], signature: str | None = None) -> int | None:
    """The smallest global batch that really ran out of memory (on ``signature``'s devices)."""
    sizes = [
        int(t.params["global_batch_size"])
        for t in trials
        if status_of(t) == "oom"
        and (signature is None or t.user_attrs.get("device_signature") == signature)
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
) -> dict[str, Any]:
    """Return the recommended-config JSON (a dict) for ``trials``.

    ``baselines`` and ``probes`` map a device signature to the study's single-device baseline
    and probe records; the chosen trial's signature picks them. Speedup is the chosen trial's
    throughput over the baseline's (one device, base batch); scaling efficiency is the speedup
    per replica (1.0 is ideal). Raises :class:`NoCompleteTrialError` when no trial completed with
    a finite loss.
    """
    unique = unique_trials(trials)
    complete = [
        t
        for t in unique
        if t.state == TrialState.COMPLETE and t.values and all(map(math.isfinite, t.values))
    ]
    if not complete:
        raise NoCompleteTrialError(
            f"study {study_name!r} has no COMPLETE trial yet; run `tuner search` first"
        )
    best_loss = min(t.values[0] for t in complete)
    threshold = best_loss + tolerance * abs(best_loss)
    candidates = [t for t in complete if t.values[0] <= threshold]
    chosen = max(candidates, key=lambda t: (t.values[1], -t.params["global_batch_size"]))
    attrs = chosen.user_attrs
    feasible = max(int(t.params["global_batch_size"]) for t in complete)
    infeasible = infeasible_batch_sizes(unique)
    largest_grid = max(int(t.params["global_batch_size"]) for t in unique)
    result: dict[str, Any] = {
        "study_name": study_name,
        "trial_number": chosen.number,
        "global_batch_size": int(chosen.params["global_batch_size"]),
        "per_replica_batch_size": int(attrs["per_replica_batch_size"]),
        "num_replicas": int(attrs["num_replicas"]),
        "devices": list(attrs.get("devices", [])),
        "device_signature": attrs.get("device_signature"),
        "learning_rate": float(attrs["learning_rate"]),
        "lr_rule": str(chosen.params["lr_rule"]),
        "base_lr": base_lr,
        "base_batch_size": base_batch_size,
        "throughput": float(chosen.values[1]),
        "final_loss": float(chosen.values[0]),
        "train_loss": attrs.get("train_loss"),
        "largest_feasible_batch_size": feasible,
        "oom_batch_sizes": infeasible,
        "policy": POLICY,
        "loss_tolerance": tolerance,
        "candidates": [t.number for t in sorted(candidates, key=lambda t: t.number)],
        "versions": dict(versions),
        "created_at": created_at,
    }
    signature = attrs.get("device_signature")
    baseline = (baselines or {}).get(str(signature), {})
    base_throughput = baseline.get("throughput")
    speedup = chosen.values[1] / base_throughput if base_throughput else None
    result["baseline_throughput"] = base_throughput
    result["speedup_vs_single_device"] = speedup
    result["scaling_efficiency"] = speedup / result["num_replicas"] if speedup else None
    probe = (probes or {}).get(str(signature))
    if probe:
        result["probe"] = {
            key: probe.get(key)
            for key in ("largest_fitting_batch", "smallest_oom_batch", "resolution", "launches")
        }
    if infeasible and feasible < largest_grid:
        result["note"] = (
            f"global batch {infeasible[0]} and larger ran out of memory; the largest that fits is "
            f"{feasible} ({feasible // int(attrs['num_replicas'])} per replica)"
        )
    return result
