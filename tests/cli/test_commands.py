"""The thin commands: what they pass to the library and print, with the library calls faked (the
real runs are in tests/e2e)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import optuna
import pytest
from conftest import invoke_tuner
from trials import make_trial

from tuner.core.protocol import DEFAULT_TRIAL_TIMEOUT_S
from tuner.driver import study as driver_study
from tuner.driver.study import DEFAULT_HEARTBEAT_S, SearchReport
from tuner.driver.validate import run as driver_validate


def finished_study() -> optuna.Study:
    """An in-memory study with two COMPLETE trials; 512 is the faster one."""
    study = optuna.create_study(study_name="fake", directions=["minimize", "maximize"])
    study.set_user_attr("spec", {"search": {"base_lr": 0.001, "base_batch_size": 256}})
    study.add_trial(make_trial(0, 256, "none", loss=0.5, throughput=1000.0))
    study.add_trial(make_trial(1, 512, "linear", loss=0.5, throughput=1800.0))
    return study


@pytest.fixture()
def fake_search(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """``run_search`` replaced: records its arguments, returns a finished study."""
    seen: dict[str, Any] = {}

    def run_search(spec: Any, plan: Any, storage: str, **options: Any) -> SearchReport:
        seen.update(options, spec=spec, plan=plan, storage=storage)
        study = finished_study()
        options["on_study"](study)
        if seen.get("interrupt"):
            raise KeyboardInterrupt
        return SearchReport(study, launched=2, grid_size=2, running=seen.get("running", 0))

    monkeypatch.setattr(driver_study, "run_search", run_search)
    return seen


def test_search_passes_the_flags_and_prints_trials_recommendation_and_json(
    fake_search: dict[str, Any], tmp_path: Path
) -> None:
    result = invoke_tuner(
        "search", "--cpu-replicas", "2", "--storage", "sqlite:///s.db", "--export", "rec.json",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert fake_search["storage"] == "sqlite:///s.db"
    assert fake_search["trial_timeout_s"] == DEFAULT_TRIAL_TIMEOUT_S
    assert fake_search["heartbeat_s"] == DEFAULT_HEARTBEAT_S
    assert fake_search["plan"].num_replicas == 2
    assert "Study fake" in result.stdout and "Recommendation" in result.stdout
    assert json.loads((tmp_path / "rec.json").read_text())["global_batch_size"] == 512
    assert "recommended config written to rec.json" in result.stderr


HEARTBEAT_OFF = """[study]
name = "regression"
[workload]
model = "tuner.workloads.regression:build_model"
data = "tuner.workloads.regression:load_data"
[search]
base_batch_size = 64
batch_multipliers = [1, 2]
lr_rules = ["none", "linear", "sqrt"]
base_lr = 1e-3
epochs = 3
heartbeat = 0
"""


def test_a_zero_heartbeat_turns_it_off_and_running_points_are_named(
    fake_search: dict[str, Any], tmp_path: Path
) -> None:
    fake_search["running"] = 1
    (tmp_path / "s.toml").write_text(HEARTBEAT_OFF)
    result = invoke_tuner("search", "--cpu-replicas", "2", "--spec", "s.toml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert fake_search["heartbeat_s"] is None
    assert "1 grid point(s) still marked RUNNING" in result.stderr


def test_ctrl_c_during_a_search_prints_what_is_stored_and_exits_130(
    fake_search: dict[str, Any], tmp_path: Path
) -> None:
    fake_search["interrupt"] = True
    result = invoke_tuner("search", "--cpu-replicas", "2", cwd=tmp_path)
    assert result.returncode == 130
    assert "Study fake (stopped)" in result.stdout
    assert "run the same command again to resume" in result.stderr
    assert result.stderr.strip().endswith("interrupted")


def test_probe_prints_the_largest_fitting_batch(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    found = {
        "largest_fitting_batch": 1024,
        "smallest_oom_batch": 2048,
        "device_signature": "2x cpu",
        "launches": 2,
        "attempts": [{"batch": b, "fits": b <= 1024} for b in (512, 1024, 2048, 1536)],
        "wall_s": 12.0,
    }
    monkeypatch.setattr(driver_study, "probe_study", lambda *args, **kwargs: found)
    result = invoke_tuner("probe", "--cpu-replicas", "2", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "largest global batch that fits on 2x cpu: 1024 (512 per replica)" in result.stdout
    assert "out of memory at 2048 — 4 sizes tried in 2 children, 12 s" in result.stdout


def test_a_failed_validation_is_a_runtime_failure_with_its_report(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    check = {"passed": False, "summary": "1.40 vs 0.43"}
    report = {
        "passed": False,
        "loop": "custom",
        "update_on": "replicas",
        "global_batch_size": 64,
        "num_replicas": 2,
        "per_replica_batch_size": 32,
        "steps": 2,
        "learning_rate": 1e-3,
        "lr_rule": "none",
        "checks": {
            "loss_parity": {**check, "single_device_losses": [0.43], "replica_losses": [1.4]}
        },
    }
    monkeypatch.setattr(driver_validate, "run_validation", lambda *args, **kwargs: report)
    result = invoke_tuner("validate", "--cpu-replicas", "2", "-o", "v.json", cwd=tmp_path)
    assert result.returncode == 1
    assert "FAIL" in result.stdout and "validation failed" in result.stdout
    assert json.loads((tmp_path / "v.json").read_text()) == report
    assert (
        result.stderr.strip().splitlines()[-1] == "error: validation failed: see the checks above"
    )


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--lr-rule", "cubic"], "'cubic' is not one of 'none', 'linear', 'sqrt'"),
        (["--loss-reduction", "sum"], "'sum' is not one of 'global', 'replica-mean'"),
        (["--steps", "0"], "--steps and --batch-size must be positive"),
    ],
)
def test_validate_rejects_bad_flags_before_any_run(
    args: list[str], fragment: str, tmp_path: Path
) -> None:
    result = invoke_tuner("validate", "--cpu-replicas", "2", *args, cwd=tmp_path)
    assert result.returncode == 2
    assert fragment in result.stderr
