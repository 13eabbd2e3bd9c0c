"""The keys that say two runs are the same, built in one place: the same training, the same input
pipeline and the same baseline. Stored keys are compared with new ones: a key's parts and their
spelling are part of the stored layout (change them and earlier figures are measured again).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tuner.core.devices import DevicePlan
from tuner.core.objective import DEFAULT_OBJECTIVE
from tuner.core.protocol import TrialRequest
from tuner.core.sameness import training_key as _training_key
from tuner.core.spec import DEFAULT_LOSS, DEFAULT_OPTIMIZER, StudySpec
from tuner.driver.children import budget_dict, first_precision
from tuner.driver.reuse import compile_cache


def _hashed(parts: Mapping[str, Any]) -> str:
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _machine(study_attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The machine and workload part of every reuse key."""
    return {
        "host": platform.node(),
        "environment": runtime_environment(),
        "versions": study_attrs.get("versions"),
        "workload": study_attrs.get("workload"),
    }


def training_key(
    spec: StudySpec,
    plan: DevicePlan,
    batch: int,
    rule: str,
    values: dict[str, Any] | None,
    precision: str | None = None,
) -> str:
    """The :func:`tuner.core.sameness.training_key` of a run of ``spec`` on ``plan``."""
    search = spec.search
    budget = {
        **budget_dict(spec),
        "target_loss": search.run.target_loss,
        "eval_every_samples": search.run.eval_every_samples,
        "noise_scale": search.run.noise_scale,
        "noise_scale_steps": search.run.noise_scale_steps,
    }
    return _training_key(
        global_batch_size=batch,
        lr_rule=rule,
        base_lr=search.grid.base_lr,
        base_batch_size=search.grid.base_batch_size,
        seed=search.run.seed,
        loop=search.run.loop_kind,
        device_signature=plan.device_signature,
        budget=budget,
        warmup_steps=search.run.warmup_steps,
        warmup_epochs=search.run.warmup_epochs,
        model_hyperparameters=values,
        precision=precision or first_precision(spec),
    )


def input_key(request: TrialRequest, study_attrs: Mapping[str, Any]) -> str:
    """The hash that says two trials' input pipelines deliver the same; the rate, rule,
    optimizer, seed and model values are left out: the pipeline does not depend on them."""
    workload = request.workload
    parts = {
        "data": workload.data,
        "dataset": workload.dataset,
        "backend": workload.backend,
        "global_batch_size": request.global_batch_size,
        "plan": request.plan.to_dict(),
        "budget": asdict(request.budget),
        "target": None if request.target is None else asdict(request.target),
        "loop": request.loop,
        "precision": request.precision,
        **_machine(study_attrs),
    }
    return _hashed(parts)


def reuse_key(request: TrialRequest, study_attrs: Mapping[str, Any], signature: str) -> str:
    """The hash that says two baselines trained the same runs on the same machine: ``request``,
    the device ``signature``, the host, the ``versions`` and the ``workload`` sizes."""
    parts = {
        "request": request_fields(request),
        "device_signature": signature,
        **_machine(study_attrs),
    }
    return _hashed(parts)


def request_fields(request: TrialRequest) -> dict[str, Any]:
    """What of ``request`` the key hashes, by the names a request had before the protocol was
    typed (stored baselines carry keys hashed from them); optional fields only when set."""
    budget, target = request.budget, request.target
    fields: dict[str, Any] = {
        "mode": request.mode,
        "plan": request.plan.to_dict(),
        "workload": _workload_fields(request),
        "global_batch_size": request.global_batch_size,
        "learning_rate": request.learning_rate,
        "epochs": budget.epochs,
        "train_samples": budget.train_samples,
        "val_samples": budget.val_samples,
        "seed": request.seed,
        "precision": request.precision,
        "loop": request.loop,
        "noise_scale": request.noise_scale,
        "noise_scale_steps": request.noise_scale_steps,
        "target_loss": None if target is None else target.loss,
        "eval_every_samples": None if target is None else target.eval_every_samples,
    }
    optional = {
        "steps_per_epoch": budget.steps_per_epoch,
        "rule": None if request.rule is None else asdict(request.rule),
        "model_hyperparameters": request.model_hyperparameters,
    }
    return {**fields, **{k: v for k, v in optional.items() if v is not None}}


def _workload_fields(request: TrialRequest) -> dict[str, Any]:
    # A loss or optimizer the spec leaves out (None since builds' compiles are kept) hashes as
    # the default it stood for before, so the baselines stored then are still found.
    fields = asdict(request.workload)
    fields["loss"] = fields["loss"] or DEFAULT_LOSS
    fields["optimizer"] = fields["optimizer"] or DEFAULT_OPTIMIZER
    if fields["objective"] == DEFAULT_OBJECTIVE:  # the loss every baseline stored before held
        del fields["objective"]
    return fields


_RUNTIME_PREFIXES = ("TF_", "XLA_", "OMP_", "MKL_", "KMP_", "CUDA_", "JAX_", "KERAS_", "TUNER_")
"""Variables the trial children inherit that change how fast they train (thread counts, the
oneDNN switch, XLA's flags, visible devices, a memory cap)."""


_NOT_SPEED = frozenset({*compile_cache.environment(Path()), compile_cache.CACHE_ENV})
"""The compilation cache's variables: they change how long a child compiles, not how fast it
trains, so a baseline measured with or without the cache is the same measurement."""


def runtime_environment() -> dict[str, str]:
    """The variables the children inherit that change their speed (the compile cache's out)."""
    return {
        k: v
        for k, v in sorted(os.environ.items())
        if k.startswith(_RUNTIME_PREFIXES) and k not in _NOT_SPEED
    }
