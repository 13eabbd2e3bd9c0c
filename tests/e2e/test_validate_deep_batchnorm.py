"""``tuner validate`` on keras.applications' MobileNetV2 (weights=None, 32x32x3, 10 classes: the
zoo's), two real CPU replicas against one device. Its 52 BatchNormalization layers make float32
training chaotic: after 2 Adam steps one device and the replicas are 0.32 apart in the weights
(the fixed tolerance is 0.1) with nothing wrong — float64 agrees to 5e-14. The control run (one
device, each batch's examples reversed) lands as far, so validate passes, with the warning that
names the control; the replica-mean bug still fails (tests/driver/test_validate.py).

Three child runs of MobileNetV2 (one device, 2 replicas, the control): 6 min 47 s measured on
2 CPU cores shared with other TensorFlow jobs (load 9-10)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_tuner

from tuner.driver.validate.checks import CONTROL_FACTOR, WEIGHTS_RTOL

SPEC = """
[study]
name = "mobilenet_v2"

[workload]
model = "workloads.applications:mobilenet_v2"
data = "workloads.applications:load_data"
loss = "sparse_categorical_crossentropy"
optimizer = "adam"

[search]
base_batch_size = 32
batch_multipliers = [1]
lr_rules = ["none"]
base_lr = 1e-3
epochs = 2
"""


@pytest.mark.slow
def test_mobilenet_v2_passes_against_the_control_run(tmp_path: Path) -> None:
    (tmp_path / "spec.toml").write_text(SPEC)
    result = run_tuner(
        "validate", "--spec", "spec.toml", "--cpu-replicas", "2", "--steps", "2",
        "--output", "report.json", cwd=tmp_path, timeout=1500,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    final = report["checks"]["final_weights"]
    # The failure this fixes: past the fixed tolerance, judged against the control instead.
    assert final["max_relative_difference"] > WEIGHTS_RTOL
    control = final["control_relative_difference"]
    assert final["max_relative_difference"] <= CONTROL_FACTOR * control
    assert any("rounding order alone" in w for w in report["warnings"])
    assert report["checks"]["weight_sync"]["passed"] and report["checks"]["device_use"]["passed"]
    assert "BatchNormalization x52: synchronized" in result.stdout
