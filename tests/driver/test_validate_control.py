"""The control run of ``tuner validate``: loss parity or final weights that fail their fixed
tolerance pass, with a warning, only within CONTROL_FACTOR of how far one device moves from
itself with each batch's examples reversed; a wrong update that stands out of that still fails."""

from __future__ import annotations

from typing import Any

import pytest

from tuner.driver.validate.checks import CONTROL_FACTOR, REORDER_ENV, WEIGHTS_RTOL, Check, evaluate


def _run(step_losses: list[float]) -> dict[str, Any]:
    return {
        "step_losses": step_losses,
        "replica_examples": [64, 64],
        "num_replicas": 2,
        "steps": len(step_losses),
        "weight_max_abs_diff": 0.0,
        "copies_per_variable": 2,
        "variables_compared": 6,
        "optimizer_learning_rate": 0.001,
        "devices": ["/cpu:0", "/cpu:1"],
    }


def _weights(worst: float) -> dict[str, Any]:
    return {
        "compared": True,
        "variables_compared": 4,
        "max_relative_difference": worst,
        "model_relative_difference": worst,
        "optimizer_relative_difference": worst,
        "largest": [["adam/kernel_momentum", worst]],
    }


def _checks(
    many_losses: list[float], apart: float, control: dict[str, Any] | None
) -> dict[str, Check]:
    checks = evaluate(
        _run([2.6484, 2.8801]),
        _run(many_losses),
        global_batch=128,
        learning_rate=0.001,
        weights=_weights(apart),
        control=control,
    )
    return {c.name: c for c in checks}


def _control(loss: float, weights: float) -> dict[str, Any]:
    return {"loss_relative_difference": loss, "weights": _weights(weights)}


# MobileNetV2 on 2 CPU replicas, 2 steps: losses 1.07e-2 apart at step 2, weights 0.32.
DIVERGED = [2.6484, 2.9112]


def test_differences_that_one_device_shows_against_itself_pass_with_a_warning() -> None:
    checks = _checks(DIVERGED, 0.32, _control(8e-3, 0.3))
    for name in ("loss parity", "final weights"):
        assert checks[name].passed, checks[name].summary
        assert "batches reversed" in checks[name].summary
        assert "rounding order alone" in (checks[name].warning or "")
    assert checks["final weights"].figures["control_relative_difference"] == 0.3


def test_a_wrong_update_that_stands_out_of_the_control_still_fails() -> None:
    # The forum answer's replica-mean: Adam's moments 0.5 apart; the control, rounding only.
    checks = _checks([2.6484, 2.8801 * 1.01], 0.5, _control(2e-7, 1e-6))
    assert not checks["loss parity"].passed and not checks["final weights"].passed
    assert checks["final weights"].warning is None
    assert "control run (one device, batches reversed) 1.0e-06" in checks["final weights"].summary
    # Just past the factor fails too: the bar is the control's figure, not a blanket pass.
    past = _checks(DIVERGED, CONTROL_FACTOR * 0.1 * 1.01, _control(1.0, 0.1))
    assert not past["final weights"].passed and past["loss parity"].passed


def test_without_a_control_or_its_weights_the_fixed_tolerances_judge() -> None:
    assert not _checks(DIVERGED, 2 * WEIGHTS_RTOL, None)["final weights"].passed
    unread = {"loss_relative_difference": 1.0, "weights": {"compared": False, "reason": "x"}}
    checks = _checks(DIVERGED, 2 * WEIGHTS_RTOL, unread)
    assert not checks["final weights"].passed and checks["loss parity"].passed


def test_the_driver_and_the_worker_name_one_environment_variable() -> None:
    determinism = pytest.importorskip("tuner.worker.determinism")
    assert REORDER_ENV == determinism.REORDER_ENV
