"""``tuner validate --backend jax --cpu-replicas 2``: real JAX children (two host CPU devices
through XLA_FLAGS) pass the same checks, at the same tolerances, as under TensorFlow, and the
deliberately wrong reduction (a per-replica mean summed over replicas, planted in fit's loss)
fails the loss-parity check and the final weights."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_tuner, write_spec

from tuner.driver.validate.checks import LOSS_RTOL

STEPS = 12


def _validate(tmp_path: Path, *extra: str) -> tuple[Any, dict[str, Any] | None]:
    spec = write_spec(tmp_path / "small.toml", base=128)
    result = run_tuner(
        "validate",
        "--spec",
        str(spec),
        "--backend",
        "jax",
        "--cpu-replicas",
        "2",
        "--steps",
        str(STEPS),
        "--batch-size",
        "128",
        "--output",
        "report.json",
        *extra,
        cwd=tmp_path,
    )
    report_file = tmp_path / "report.json"
    return result, json.loads(report_file.read_text()) if report_file.exists() else None


@pytest.mark.slow
def test_jax_validate_passes_with_the_global_reduction(tmp_path: Path) -> None:
    result, report = _validate(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "all checks passed" in result.stdout
    assert "Validation on jax: fit loop" in result.stdout
    assert report is not None and report["passed"]
    assert report["backend"] == "jax"
    assert report["device_signature"] == "2x cpu, jax"
    assert "tensorflow" not in report["versions"] and "jax" in report["versions"]
    parity = report["checks"]["loss_parity"]
    assert parity["tolerance"] == LOSS_RTOL
    assert parity["max_relative_difference"] <= LOSS_RTOL
    assert parity["steps_compared"] == report["steps"] == STEPS
    assert report["checks"]["weight_sync"]["passed"]
    assert report["checks"]["weight_sync"]["copies_per_variable"] == 2
    assert report["checks"]["final_weights"]["max_relative_difference"] < 1e-5
    assert report["checks"]["device_use"]["replica_examples"] == [STEPS * 64] * 2
    assert report["checks"]["learning_rate"]["passed"]


@pytest.mark.slow
def test_jax_validate_fails_the_wrong_reduction_on_loss_parity(tmp_path: Path) -> None:
    result, report = _validate(tmp_path, "--loss-reduction", "replica-mean")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "validation failed" in result.stderr and "Traceback" not in result.stderr
    assert report is not None and not report["passed"]
    assert report["loss_reduction"] == "replica-mean"
    checks = report["checks"]
    assert not checks["loss_parity"]["passed"]
    assert checks["loss_parity"]["median_loss_ratio"] == pytest.approx(2.0, rel=1e-2)
    failed = [line for line in result.stdout.splitlines() if "FAIL" in line]
    assert any("loss parity" in line for line in failed), result.stdout
    # The updates differ, and the final weights say so: Adam's moments are 2x and 4x.
    assert any("final weights" in line for line in failed), result.stdout
    assert checks["final_weights"]["optimizer_relative_difference"] > 0.4
    assert report["warnings"] == []
