"""From trials to a recommendation: pure functions over Optuna ``FrozenTrial`` objects.

Each configuration counts once, through its representative (the run with the most repeats;
:mod:`tuner.core.configurations`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from optuna.trial import FrozenTrial

from tuner.core.accumulation import accumulation_fields
from tuner.core.configurations import is_complete, model_config, precision_of, unique_trials
from tuner.core.errors import NoCompleteTrialError
from tuner.core.recommend import DEFAULT_TIE_MARGIN, DEFAULT_TOLERANCE, default_policy
from tuner.core.recommend._candidates import choose, loss_tolerance, policy_candidates
from tuner.core.recommend._fields import (
    Context,
    chosen_fields,
    decision_fields,
    hypermodel_fields,
    oom_note,
    precision_fields,
    probe_fields,
    speedup_of,
    target_fields,
)
from tuner.core.recommend._law import law_fields
from tuner.core.recommend._verdict import verdict
from tuner.core.record import decode

_PER_SIGNATURE_KEYS = (
    "trial_number",
    "global_batch_size",
    "per_replica_batch_size",
    "num_replicas",
    "learning_rate",
    "lr_rule",
    "precision",
    "throughput",
    "throughput_ci",
    "runs",
    "final_loss",
    "largest_feasible_batch_size",
    "oom_batch_sizes",
    "speedup_vs_single_device",
    "speedup_ci",
    "model_hyperparameters",
    "gradient_noise_scale",
    "goodput",
    "tied_with",
    "verdict",
)


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
    policy: str | None = None,
    target_loss: float | None = None,
    seed_noise: dict[str, dict[str, Any]] | None = None,
    tie_margin: float = DEFAULT_TIE_MARGIN,
) -> dict[str, Any]:
    """The recommended-config JSON (a dict) for ``trials``.

    Throughput is only comparable between identical devices, so each ``device_signature`` gets
    its own recommendation under ``per_device_signature``; the top level is the one with the
    most COMPLETE trials (a ``note`` says so when there are several). ``baselines``, ``probes``
    and ``seed_noise`` map a device signature to the study's records. ``policy`` ``None`` is
    :func:`default_policy` of ``target_loss``. Raises :class:`NoCompleteTrialError` when no
    trial completed with a finite loss (or, under ``time-to-target``, none reached the target).
    """
    context = Context(
        study_name=study_name,
        base_lr=base_lr,
        base_batch_size=base_batch_size,
        versions=versions,
        created_at=created_at,
        tolerance=tolerance,
        baselines=baselines,
        probes=probes,
        hypermodel=hypermodel,
        policy=default_policy(target_loss) if policy is None else policy,
        target_loss=target_loss,
        seed_noise=seed_noise,
        tie_margin=tie_margin,
    )
    groups = _by_signature(trials)
    per_signature: dict[str, dict[str, Any]] = {}
    failures: list[NoCompleteTrialError] = []
    for sig in _usable_signatures(groups, study_name):
        try:
            per_signature[sig] = _recommend_one(sig, groups[sig], context)
        except NoCompleteTrialError as error:  # e.g. none reached the target on these devices
            failures.append(error)
    if not per_signature:
        raise failures[0]
    return _with_other_signatures(per_signature)


def _by_signature(trials: Iterable[FrozenTrial]) -> dict[str, list[FrozenTrial]]:
    groups: dict[str, list[FrozenTrial]] = {}
    for trial in trials:  # grid points are unique within a signature, not across signatures
        signature = decode(trial).configuration.device_signature or "unknown"
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


def _with_other_signatures(per_signature: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The first signature's recommendation, with every signature's summary beside it."""
    usable = list(per_signature)
    result = dict(per_signature[usable[0]])
    result["per_device_signature"] = {
        sig: {key: rec.get(key) for key in _PER_SIGNATURE_KEYS}
        for sig, rec in per_signature.items()
    }
    if len(usable) > 1:
        note = (
            f"trials ran on {len(usable)} device signatures ({'; '.join(usable)}) whose "
            "throughput is not comparable: each has its own recommendation under "
            f"per_device_signature; this one is for {usable[0]} (most completed trials)"
        )
        result["note"] = note + (f"; {result['note']}" if "note" in result else "")
    return result


def _recommend_one(
    signature: str, trials: Sequence[FrozenTrial], context: Context
) -> dict[str, Any]:
    """The recommendation among ``trials``, which all ran on the device signature."""
    unique = unique_trials(trials)
    tolerance = loss_tolerance(context.tolerance, (context.seed_noise or {}).get(signature))
    candidates = policy_candidates(
        trials,
        context.policy,
        tolerance.applied,
        study_name=context.study_name,
        target_loss=context.target_loss,
    )
    chosen, decision = choose(candidates, context.policy, context.tie_margin)
    # Feasibility belongs to one model at one precision: in a joint search, the chosen trial's
    # configuration; across precisions, its own (bf16 fits larger batches than float32).
    same_model = [t for t in unique if model_config(t) == model_config(chosen)]
    same_config = [t for t in same_model if precision_of(t) == precision_of(chosen)]
    speedup = speedup_of(chosen, context)
    result = {
        **chosen_fields(chosen, context, candidates, same_model),
        **precision_fields(chosen, same_model),
        **decision_fields(chosen, decision, tolerance),
        **speedup.fields(),
        "verdict": verdict(
            speedup,
            decision.tied_with,
            int(chosen.params["global_batch_size"]),
            same_batch=decision.same_batch,
            margin=decision.margin,
            close=decision.close,
            policy=context.policy,
        ),
        **target_fields(chosen, context, [t for t in same_config if is_complete(t)]),
        **hypermodel_fields(chosen, context),
        **probe_fields(chosen, context),
        **law_fields(chosen, same_config, (context.seed_noise or {}).get(signature)),
        **accumulation_fields(chosen, same_config),
    }
    note = oom_note(result, same_config)
    if note:
        result["note"] = note
    return result
