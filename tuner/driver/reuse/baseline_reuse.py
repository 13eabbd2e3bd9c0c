"""Reusing a single-device baseline that another study in the same storage measured.

The baseline (:func:`tuner.driver.setup.baseline.run_baseline`) trains the base configuration on one
device ``max_repeats`` times: 3 children of a default search. Two studies of the same workload
on the same machine — another grid of batches or rules, another study name, a search rerun
under a new name — would measure exactly the same runs again. So every stored baseline carries
its **reuse key** (:func:`reuse_key`): a hash of the request its runs were sent (workload,
base batch and learning rate, budget, seed, precision, loop, the single device, its memory cap),
the grid's device signature, the host, the framework versions the workload check imported,
the workload's sizes and fingerprint (its model and data modules' source, the built model's
configuration, its first samples: :mod:`tuner.worker.digest`), and the variables the children
inherit that change their speed (``TF_*``, ``XLA_*``, ``OMP_*``, ``CUDA_*``, ...). A study that
has no baseline of its own copies the newest record with the
same key and at least as many runs (:func:`find_baseline`), naming the study it came from
(``reused_from``). Nothing else is reused: another host, version, seed, budget or precision is
another key.
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

import optuna

from tuner.core.protocol import TrialRequest
from tuner.core.record import decode_study
from tuner.core.spec import DEFAULT_LOSS, DEFAULT_OPTIMIZER
from tuner.driver.reuse import compile_cache


def reuse_key(request: TrialRequest, study_attrs: Mapping[str, Any], signature: str) -> str:
    """The hash that says two baselines trained the same runs on the same machine: the
    baseline's ``request``, the grid's device ``signature``, the host, and from
    ``study_attrs`` the framework ``versions`` and the ``workload`` sizes."""
    parts = {
        "request": request_fields(request),
        "device_signature": signature,
        "host": platform.node(),
        "versions": study_attrs.get("versions"),
        "workload": study_attrs.get("workload"),
        "environment": runtime_environment(),
    }
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def request_fields(request: TrialRequest) -> dict[str, Any]:
    """What of ``request`` the key hashes, by the names a request had before the protocol was
    typed: stored baselines carry keys hashed from them, and a study reuses them only while
    this reads the same. The fields a run does not train by are left out (a target's cadence
    batches; a baseline trains its whole budget), and the optional ones only count when set."""
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
    return fields


_RUNTIME_PREFIXES = ("TF_", "XLA_", "OMP_", "MKL_", "KMP_", "CUDA_", "JAX_", "KERAS_", "TUNER_")
"""Variables the trial children inherit that change how fast they train (thread counts, the
oneDNN switch, XLA's flags, visible devices, a memory cap)."""


_NOT_SPEED = frozenset({*compile_cache.environment(Path()), compile_cache.CACHE_ENV})
"""The compilation cache's variables: they change how long a child compiles, not how fast it
trains, so a baseline measured with or without the cache is the same measurement."""


def runtime_environment() -> dict[str, str]:
    """The variables the trial children inherit that change how fast they train (the
    compilation cache's left out): part of every reuse key (this and
    :mod:`tuner.driver.reuse.input_reuse`)."""
    return {
        k: v
        for k, v in sorted(os.environ.items())
        if k.startswith(_RUNTIME_PREFIXES) and k not in _NOT_SPEED
    }


_runtime_environment = runtime_environment  # the name tests/driver/test_compile_cache.py reads


def find_baseline(study: optuna.Study, key: str, repeats: int) -> tuple[str, dict[str, Any]] | None:
    """The newest baseline another study in ``study``'s storage stored under ``key`` with at
    least ``repeats`` runs, as ``(the study that measured it, the record)``; ``None`` if none."""
    # Optuna has no public handle on a study's storage; the views read it the same way.
    found = [
        (str(record.get("reused_from") or other.study_name), record)
        for other in study._storage.get_all_studies()
        if other.study_name != study.study_name
        for record in (decode_study(other).baselines or {}).values()
        if _matches(record, key, repeats)
    ]
    return max(found, key=lambda pair: str(pair[1].get("measured_at", ""))) if found else None


def _matches(record: Any, key: str, repeats: int) -> bool:
    return (
        isinstance(record, dict)
        and record.get("reuse_key") == key
        and record.get("status") == "ok"
        and len(record.get("repeats") or ()) >= repeats
    )
