"""Requests for tests that talk to the child's side directly, built from flat keyword fields.

A test names only what it is about: ``run_request("probe", steps_per_epoch=2, epochs=1)``; each
field goes where the protocol keeps it (a :class:`~tuner.core.protocol.Workload` field to the
workload, a :class:`~tuner.core.protocol.Budget` field to the budget, ``target_loss``,
``eval_every_samples`` and ``cadence_batches`` to the target), the rest keeps defaults that run.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from tuner.core.devices import DevicePlan
from tuner.core.protocol import (
    Budget,
    InspectRequest,
    LearningRateRule,
    LrFindRequest,
    ProbeRequest,
    RunRequest,
    Target,
    TrialRequest,
    ValidateRequest,
    Workload,
)

MODEL = "tuner.workloads.regression:build_model"
DATA = "tuner_test_workloads:small_regression_data"
_RUNS: dict[str, type[RunRequest]] = {
    "trial": TrialRequest,
    "probe": ProbeRequest,
    "validate": ValidateRequest,
    "lr_find": LrFindRequest,
}
_TARGET = {"target_loss": "loss", "eval_every_samples": "eval_every_samples"}


def _take(kind: type, given: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(kind)}
    return {name: given.pop(name) for name in list(given) if name in names}


def workload(**given: Any) -> Workload:
    """The built-in regression model on small arrays, with ``given`` fields."""
    return Workload(**{"model": MODEL, "data": DATA, "loss": "mse", "optimizer": "adam", **given})


def rule(name: str, **given: Any) -> LearningRateRule:
    """Learning-rate rule ``name`` at twice the base batch (base rate 1e-3), with ``given``
    fields."""
    defaults: dict[str, Any] = {
        "ratio": 2.0,
        "base_lr": 1e-3,
        "learning_rate": 2e-3,
        "warmup_steps": None,
        "warmup_epochs": 1.0,
        "sample_budget": False,
    }
    return LearningRateRule(name=name, **{**defaults, **given})


def inspect_request(**given: Any) -> InspectRequest:
    """A workload check of :func:`workload` with ``given`` fields (flat, see the module)."""
    given = dict(given)
    made = workload(**_take(Workload, given))
    budget = Budget(**_take(Budget, given))
    defaults: dict[str, Any] = {"loop": "fit", "lr_rules": ("none",), "max_ratio": 1}
    return InspectRequest(workload=made, budget=budget, **{**defaults, **given})


def run_request(mode: str = "trial", **given: Any) -> Any:
    """A training run of ``mode`` (``trial``, ``probe`` or ``validate``) at global batch 128 on
    two CPU replicas for two epochs, with ``given`` fields (flat, see the module)."""
    given = dict(given)
    made = workload(**_take(Workload, given))
    budget = Budget(**{"epochs": 2, **_take(Budget, given)})
    target = None
    if "target_loss" in given:
        target = Target(
            **{_TARGET[k]: given.pop(k) for k in list(given) if k in _TARGET},
            cadence_batches=tuple(given.pop("cadence_batches", ())),
        )
    defaults: dict[str, Any] = {
        "plan": DevicePlan("cpu", 2),
        "global_batch_size": 128,
        "learning_rate": 1e-3,
        "seed": 0,
        "precision": "float32",
        "loop": "fit",
    }
    fields_ = {**defaults, "workload": made, "budget": budget, "target": target, **given}
    return _RUNS[mode](**fields_)
