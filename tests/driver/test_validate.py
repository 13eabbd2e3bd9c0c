"""`tuner validate`: the checks pass for every offered loop and catch a wrong loss reduction."""

from __future__ import annotations

import json

import optuna
import pytest
from conftest import run_tuner, write_spec

from tuner.core.record import decode
from tuner.driver.validate.checks import LOSS_RTOL, WEIGHTS_RTOL, evaluate

REPORT_KEYS = {
    "passed",
    "backend",
    "loop",
    "update_on",
    "loss_reduction",
    "global_batch_size",
    "num_replicas",
    "per_replica_batch_size",
    "learning_rate",
    "lr_rule",
    "device_signature",
    "steps",
    "checks",
    "warnings",
    "deterministic_layers",
    "versions",
    "created_at",
}
CHECKS = {"loss_parity", "final_weights", "weight_sync", "device_use", "learning_rate"}


def _validate(tmp_path, *extra: str):
    spec = write_spec(tmp_path / "small.toml", base=128)
    result = run_tuner(
        "validate",
        "--spec",
        str(spec),
        "--cpu-replicas",
        "2",
        "--steps",
        "30",
        "--lr-rule",
        "sqrt",
        "--batch-size",
        "256",
        "--output",
        "report.json",
        *extra,
        cwd=tmp_path,
    )
    report = json.loads((tmp_path / "report.json").read_text()) if result.returncode < 2 else None
    return result, report


@pytest.mark.slow
@pytest.mark.parametrize(
    ("flags", "loop", "update_on"),
    [
        ((), "fit", "replicas"),
        (("--loop", "custom"), "custom", "replicas"),
        (("--loop", "custom", "--update-on", "cpu"), "custom", "cpu"),
    ],
)
def test_every_offered_loop_passes(tmp_path, flags, loop, update_on):
    result, report = _validate(tmp_path, *flags)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "all checks passed" in result.stdout
    assert set(report) == REPORT_KEYS and set(report["checks"]) == CHECKS
    assert report["passed"] and (report["loop"], report["update_on"]) == (loop, update_on)
    assert report["global_batch_size"] == 256 and report["per_replica_batch_size"] == 128
    parity = report["checks"]["loss_parity"]
    assert parity["max_relative_difference"] <= LOSS_RTOL
    assert parity["steps_compared"] == report["steps"] >= 28
    assert len(parity["single_device_losses"]) == len(parity["replica_losses"])
    assert report["checks"]["weight_sync"]["max_abs_difference"] == 0.0
    final = report["checks"]["final_weights"]
    assert final["passed"] and final["max_relative_difference"] <= 1e-5  # rounding order only
    assert report["warnings"] == [] and report["deterministic_layers"] == []
    use = report["checks"]["device_use"]
    assert use["replica_examples"] == [report["steps"] * 128] * 2
    lr = report["checks"]["learning_rate"]
    assert lr["actual"] == pytest.approx(1e-3 * 2**0.5, rel=1e-6)  # sqrt rule at k = 2
    if update_on == "cpu":
        devices = report["checks"]["weight_sync"]["variable_devices"]
        assert devices and all(d.endswith("CPU:0") for d in devices)
        assert report["checks"]["weight_sync"]["copies_per_variable"] == 1
    else:
        assert report["checks"]["weight_sync"]["copies_per_variable"] == 2


@pytest.mark.slow
def test_a_wrong_loss_reduction_is_detected(tmp_path):
    # The forum answer's loop: tf.reduce_mean per replica, SUM-reduced across two replicas.
    result, report = _validate(tmp_path, "--loop", "custom", "--loss-reduction", "replica-mean")
    assert result.returncode == 1
    assert "validation failed" in result.stderr and "Traceback" not in result.stderr
    assert not report["passed"]
    parity = report["checks"]["loss_parity"]
    assert not parity["passed"]
    assert parity["median_loss_ratio"] == pytest.approx(2.0, rel=1e-3)
    # The updates differ, and that is the evidence named: Adam's moments are 2x and 4x.
    final = report["checks"]["final_weights"]
    assert not final["passed"] and final["optimizer_relative_difference"] > 0.4
    assert "velocity" in final["largest"][0][0] or "momentum" in final["largest"][0][0]
    assert any("final weights" in line and "FAIL" in line for line in result.stdout.splitlines())
    assert "warning:" not in result.stdout  # a doubled loss with differing updates: no excuse


@pytest.mark.parametrize(
    ("flags", "fragment"),
    [
        (("--loss-reduction", "replica-mean"), "custom loops only"),
        (("--update-on", "cpu"), "needs loop = custom"),
        (("--loop", "sideways"), "'sideways' is not one of 'fit', 'custom'"),
        (("--lr-rule", "cubic"), "--lr-rule"),
        (("--cpu-replicas", "1"), "at least 2 devices"),
        (("--batch-size", "255"), "does not divide"),
    ],
)
def test_bad_validate_input_exits_2(tmp_path, flags, fragment):
    args = list(flags)
    if "--cpu-replicas" not in args:
        args = ["--cpu-replicas", "2", *args]
    result = run_tuner("validate", *args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert fragment in result.stderr and "Traceback" not in result.stderr


def _run(step_losses, examples=(64, 64), diff=0.0, lr=0.001, copies=2):
    return {
        "step_losses": step_losses,
        "replica_examples": list(examples),
        "num_replicas": len(examples),
        "steps": len(step_losses),
        "weight_max_abs_diff": diff,
        "copies_per_variable": copies,
        "variables_compared": 6,
        "optimizer_learning_rate": lr,
        "devices": ["/cpu:0", "/cpu:1"],
    }


def _verdicts(single, multi, lr=0.001):
    return {c.name: c.passed for c in evaluate(single, multi, global_batch=64, learning_rate=lr)}


def _weights(model=0.0, optimizer=0.0):
    worst = max(model, optimizer)
    return {
        "compared": True,
        "variables_compared": 4,
        "max_relative_difference": worst,
        "model_relative_difference": model,
        "optimizer_relative_difference": optimizer,
        "largest": [["adam/dense_kernel_velocity", worst]],
    }


def _checks(single, multi, weights):
    checks = evaluate(single, multi, global_batch=64, learning_rate=0.001, weights=weights)
    return {c.name: c for c in checks}


def test_a_loss_logged_at_1_over_replicas_passes_on_the_weights_with_a_named_warning():
    # The custom train_step guide: compute_loss's value, scaled by 1/2 under two replicas.
    one = _run([0.5, 0.4, 0.3])
    many = _run([0.25, 0.2, 0.15])
    checks = _checks(one, many, _weights(2e-7, 1e-7))
    parity = checks["loss parity"]
    assert parity.passed and parity.figures["median_loss_ratio"] == pytest.approx(0.5)
    assert "scaled by 1/2" in parity.warning and "compute_loss" in parity.warning
    assert "the updates agree" in parity.warning
    assert checks["final weights"].passed and checks["final weights"].warning is None


def test_a_scaled_loss_with_differing_weights_fails_on_both():
    one = _run([0.5, 0.4, 0.3])
    doubled = _run([1.0, 0.8, 0.6])  # the forum answer's replica-mean: the loss and the moments
    checks = _checks(one, doubled, _weights(1e-2, 0.5))
    assert not checks["loss parity"].passed and checks["loss parity"].warning is None
    assert not checks["final weights"].passed
    assert "optimizer state 5.0e-01" in checks["final weights"].summary


def test_a_loss_off_by_no_constant_factor_fails_even_with_agreeing_weights():
    checks = _checks(_run([0.5, 0.4, 0.3]), _run([0.25, 0.4, 0.15]), _weights())
    assert not checks["loss parity"].passed


def test_weights_past_rounding_but_within_tolerance_pass_with_a_warning():
    checks = _checks(_run([0.5, 0.4]), _run([0.5, 0.4]), _weights(5e-3, 2e-2))
    assert (
        checks["final weights"].passed and "amplifies rounding" in checks["final weights"].warning
    )
    assert not _checks(_run([0.5]), _run([0.5]), _weights(0.0, 2 * WEIGHTS_RTOL))[
        "final weights"
    ].passed
    missing = _checks(_run([0.5]), _run([0.5]), {"compared": False, "reason": "no weights saved"})
    assert not missing["final weights"].passed


def test_evaluate_passes_a_faithful_run():
    one = _run([0.5, 0.4])
    many = _run([0.5 * (1 + LOSS_RTOL / 2), 0.4])
    assert all(_verdicts(one, many).values())


def test_evaluate_fails_each_check_on_its_own_evidence():
    one = _run([0.5, 0.4])
    assert not _verdicts(one, _run([0.5 * (1 + 3 * LOSS_RTOL), 0.4]))["loss parity"]
    assert not _verdicts(one, _run([0.5, float("nan")]))["loss parity"]
    assert not _verdicts(one, _run([0.5]))["loss parity"]  # a run that stopped early
    assert not _verdicts(one, _run([0.5, 0.4], diff=1e-9))["weight sync"]
    assert not _verdicts(one, _run([0.5, 0.4], examples=(128, 0)))["device use"]
    assert not _verdicts(one, _run([0.5, 0.4], examples=(96, 32)))["device use"]
    assert not _verdicts(one, _run([0.5, 0.4], lr=0.002))["learning rate"]


def test_a_dataset_function_claims_no_parity_but_keeps_the_other_checks():
    one = _run([0.5, 0.4])
    many = {**_run([0.9, 0.8]), "input_form": "function"}  # losses that would fail parity
    checks = {c.name: c for c in evaluate(one, many, global_batch=64, learning_rate=0.001)}
    assert checks["loss parity"].figures == {"compared": False, "reason": "dataset function"}
    with_weights = evaluate(one, many, global_batch=64, learning_rate=0.001, weights=_weights(0.9))
    assert all(c.passed for c in with_weights if c.name == "final weights")  # not claimed either
    assert "not compared" in checks["loss parity"].summary
    assert "median loss ratio" not in checks["loss parity"].summary  # no figure it can't stand by
    assert not _verdicts(one, {**_run([0.5, 0.4], diff=1e-9), "input_form": "function"})[
        "weight sync"
    ]


@pytest.mark.slow
def test_search_with_validate_and_a_custom_loop(tmp_path):
    # `tuner search` takes the loop from the spec only (its --validate checks run that loop).
    spec = write_spec(
        tmp_path / "small.toml", base=256, multipliers="[1]", rules='["none"]', loop="custom"
    )
    result = run_tuner(
        "search",
        "--spec",
        str(spec),
        "--cpu-replicas",
        "2",
        "--storage",
        "sqlite:///c.db",
        "--validate",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "all checks passed" in result.stderr
    study = optuna.load_study(study_name="small", storage=f"sqlite:///{tmp_path}/c.db")
    (trial,) = study.get_trials()
    assert decode(trial).status == "ok"
    assert (decode(trial).configuration.loop, decode(trial).configuration.update_on) == (
        "custom",
        "replicas",
    )
    assert study.user_attrs["spec"]["search"]["loop"] == "custom"
