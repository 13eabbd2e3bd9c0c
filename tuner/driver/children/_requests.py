"""What a child process is asked to run: the requests of ``tuner.core.protocol``, in one place.

Every request names the workload and, but for ``inspect``, the device plan; the child reads it
with ``python -m tuner.worker``. The device signature keys what runs find on those devices
(out-of-memory sizes, probes, baselines): it travels with the requests' results.
"""

from __future__ import annotations

from typing import Any

from tuner.core.devices import DevicePlan
from tuner.core.scaling import batch_ratio
from tuner.core.spec import StudySpec
from tuner.core.target import budget_samples, check_cadence, default_cadence


def workload_dict(spec: StudySpec) -> dict[str, str | None]:
    """The workload as a request carries it."""
    return {
        "model": spec.workload.model,
        "data": spec.workload.data,
        "dataset": spec.workload.dataset,
        "loss": spec.workload.loss,
        "optimizer": spec.workload.optimizer,
        "backend": spec.workload.backend,
    }


def budget_dict(spec: StudySpec) -> dict[str, int | None]:
    """How much a run trains and evaluates: epochs or a sample budget, and the validation set."""
    return {
        "epochs": spec.search.epochs,
        "train_samples": spec.search.train_samples,
        "val_samples": spec.search.val_samples,
    }


def target_dict(spec: StudySpec, n_train: int | None = None) -> dict[str, Any]:
    """The loss target and its cadence as a request carries them (``None`` without a target).

    A user's cadence is checked against the grid (:func:`tuner.core.target.check_cadence`: one
    ``ConfigError`` line). Without one, the cadence comes from the budget
    (:func:`tuner.core.target.default_cadence`); when the budget is epochs over a training set of
    size unknown here, the request carries ``None`` and the grid's batches, and the child picks
    the same cadence from its own ``n_train``."""
    search = spec.search
    target = search.target_loss
    cadence = search.eval_every_samples
    if target is None:
        return {"target_loss": None, "eval_every_samples": None}
    batches = search.global_batch_sizes
    budget = budget_samples(search.train_samples, search.epochs, n_train)
    if cadence is not None:
        check_cadence(cadence, batches, budget)
    elif budget is not None:
        cadence = default_cadence(batches, budget)
    return {
        "target_loss": target,
        "eval_every_samples": cadence,
        "cadence_batches": list(batches),
    }


def first_precision(spec: StudySpec) -> str:
    """The precision of the runs outside the grid (probe, baseline, seeds, validate): the
    spec's first."""
    return spec.search.precisions[0]


def inspect_request(spec: StudySpec) -> dict[str, Any]:
    """Load ``spec``'s workload once and report its sizes, shapes and versions."""
    return {
        "mode": "inspect",
        "workload": workload_dict(spec),
        "loop": spec.search.loop_kind,
        "lr_rules": list(spec.search.lr_rules),
        "max_ratio": max(spec.search.batch_multipliers),
        **budget_dict(spec),
    }


def trial_request(
    spec: StudySpec,
    plan: DevicePlan,
    batch: int,
    lr: float,
    mode: str = "trial",
    rule: str | None = None,
    *,
    seed: int | None = None,
    n_train: int | None = None,
    precision: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """One training run of ``spec``'s workload at ``batch`` and ``lr`` (``rule``: the
    learning-rate rule, for the rules that also shape the optimizer; ``seed``: the run's seed of
    initial weights and data order, default the spec's; ``n_train``: the training set's size, when
    known, for the target's cadence under an epochs budget; ``precision``: the Keras dtype policy
    the child sets, default the spec's first precision)."""
    search = spec.search
    request = {
        "mode": mode,
        "plan": plan.to_dict(),
        "workload": workload_dict(spec),
        "global_batch_size": batch,
        "learning_rate": lr,
        **budget_dict(spec),
        "seed": search.seed if seed is None else seed,
        "precision": precision or first_precision(spec),
        "loop": search.loop_kind,
        "noise_scale": search.noise_scale,
        "noise_scale_steps": search.noise_scale_steps,
        **target_dict(spec, n_train),
        **extra,
    }
    if rule is not None:
        request["rule"] = {
            "name": rule,
            "ratio": batch_ratio(batch, search.base_batch_size),
            "base_lr": search.base_lr,
            "learning_rate": lr,
            "warmup_steps": search.warmup_steps,
            "warmup_epochs": search.warmup_epochs,
            "sample_budget": search.train_samples is not None,
        }
    return request


def validate_request(
    spec: StudySpec,
    plan: DevicePlan,
    batch: int,
    lr: float,
    *,
    steps: int,
    loss_reduction: str,
) -> dict[str, Any]:
    """About ``steps`` steps of ``spec``'s workload on ``plan`` that report per-step losses and
    per-replica counts for ``tuner validate``."""
    windows = spec.search.epochs or 2
    return {
        "mode": "validate",
        "plan": plan.to_dict(),
        "workload": workload_dict(spec),
        "global_batch_size": batch,
        "learning_rate": lr,
        # About ``steps`` steps over the spec's epochs (two windows under a sample budget).
        "epochs": windows,
        "steps_per_epoch": max(1, steps // windows),
        "val_samples": spec.search.val_samples,
        "seed": spec.search.seed,
        "precision": first_precision(spec),
        "loop": spec.search.loop_kind,
        "loss_reduction": loss_reduction,
    }
