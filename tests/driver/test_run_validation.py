"""``run_validation`` with a fake runner: the two runs it asks for, and the options it refuses."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fake_child import PLAN, FakeChild, make_spec

from tuner.core.devices import DevicePlan
from tuner.core.errors import ConfigError, TunerError, WorkloadError
from tuner.driver.validate.run import run_validation


def measured(request: Any) -> dict[str, Any]:
    """A validation run that passes every check: same losses, one batch split evenly, the same
    weights after its steps (saved where the request says, as the child saves them)."""
    replicas = request.plan.num_replicas
    np.savez(request.weights_file, **{"final/0": np.ones(3), "initial/0": np.zeros(3)})
    steps = request.budget.epochs * request.budget.steps_per_epoch
    return {
        "status": "ok",
        "step_losses": [1.0 / (step + 1) for step in range(steps)],
        "weight_max_abs_diff": 0.0,
        "copies_per_variable": replicas,
        "variables_compared": 4,
        "replica_examples": [steps * request.global_batch_size // replicas] * replicas,
        "num_replicas": replicas,
        "steps": steps,
        "devices": [f"/cpu:{i}" for i in range(replicas)],
        "optimizer_learning_rate": request.learning_rate,
        "versions": {"tensorflow": "fake"},
        "variable_names": ["dense/kernel"],
        "model_variables": 1,
        "deterministic_layers": ["Dropout(0.5): rate 0 for the parity pass"],
    }


def test_one_device_then_the_replicas_at_the_same_batch() -> None:
    child = FakeChild(measured)
    report = run_validation(
        make_spec(), PLAN, lr_rule="linear", global_batch=128, steps=10, runner=child
    )
    assert [r.plan.num_replicas for r in child.requests] == [1, 2]
    for request in child.requests:
        assert request.mode == "validate"
        assert request.global_batch_size == 128
        assert request.learning_rate == pytest.approx(2e-3)
        assert request.budget.steps_per_epoch == 10
        assert request.loss_reduction == "global"
    assert report["passed"] is True
    assert set(report["checks"]) == {
        "loss_parity",
        "final_weights",
        "weight_sync",
        "device_use",
        "learning_rate",
    }
    assert report["checks"]["final_weights"]["max_relative_difference"] == 0.0
    assert report["deterministic_layers"] == ["Dropout(0.5): rate 0 for the parity pass"]
    assert report["warnings"] == []
    assert (report["num_replicas"], report["per_replica_batch_size"]) == (2, 64)
    assert report["steps"] == 10 and report["versions"] == {"tensorflow": "fake"}


def test_a_failed_run_is_a_runtime_failure() -> None:
    child = FakeChild(lambda request: {"status": "error", "error": "boom"})
    with pytest.raises(TunerError, match=r"the 1-device validation run failed \(error\): boom"):
        run_validation(make_spec(), PLAN, runner=child)


def test_a_refused_workload_is_bad_input() -> None:
    child = FakeChild(lambda request: {"status": "invalid", "error": "bad loss"})
    with pytest.raises(WorkloadError, match="bad loss"):
        run_validation(make_spec(), PLAN, runner=child)


@pytest.mark.parametrize(
    ("plan", "options", "message"),
    [
        (DevicePlan(kind="cpu", num_replicas=1), {}, "select at least 2 devices"),
        (PLAN, {"loss_reduction": "per-replica"}, "applies to custom loops only"),
        (PLAN, {"global_batch": 65}, "global batch 65 does not divide by 2 replicas"),
    ],
)
def test_options_that_cannot_compare_are_refused_before_any_child(
    plan: DevicePlan, options: dict[str, Any], message: str
) -> None:
    child = FakeChild(measured)
    with pytest.raises(ConfigError, match=message):
        run_validation(make_spec(), plan, **options, runner=child)
    assert child.requests == []
