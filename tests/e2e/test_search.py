"""A real study end to end: real TensorFlow on two CPU replicas, real SQLite, the real CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import optuna
import pytest
from conftest import run_tuner, sha256, tuner_env
from optuna.trial import TrialState

from tuner.core.outcome import PHASES
from tuner.core.record import decode
from tuner.core.scaling import scaled_learning_rate

pytestmark = pytest.mark.slow


def _trials(work, url, name="small"):
    storage = optuna.storages.RDBStorage(url.replace("sqlite:///", f"sqlite:///{work}/"))
    return optuna.load_study(study_name=name, storage=storage).get_trials()


def test_every_grid_point_completes_with_measured_values(small_study):
    work, url = small_study
    trials = _trials(work, url)
    assert sorted((t.params["global_batch_size"], t.params["lr_rule"]) for t in trials) == [
        (b, r) for b in (256, 512) for r in ("linear", "none", "sqrt")
    ]
    for trial in trials:
        attrs = decode(trial).flat
        batch, rule = trial.params["global_batch_size"], trial.params["lr_rule"]
        assert trial.state == TrialState.COMPLETE
        assert attrs["status"] == "ok"
        assert attrs["num_replicas"] == 2
        assert attrs["per_replica_batch_size"] * 2 == batch
        assert attrs["learning_rate"] == pytest.approx(scaled_learning_rate(rule, 1e-3, batch, 256))
        # The optimizer inside the child really used the rule's learning rate.
        assert attrs["optimizer_learning_rate"] == pytest.approx(attrs["learning_rate"], rel=1e-6)
        final_loss, throughput = trial.values
        assert throughput > 0 and math.isfinite(final_loss)
        assert attrs["throughput"] == throughput and attrs["final_loss"] == final_loss
        assert math.isfinite(attrs["train_loss"])
        assert len(attrs["epoch_throughputs"]) == 2
        assert attrs["devices"] and len(attrs["devices"]) == 2


def test_study_attributes_and_metric_names(small_study):
    work, url = small_study
    storage = optuna.storages.RDBStorage(url.replace("sqlite:///", f"sqlite:///{work}/"))
    study = optuna.load_study(study_name="small", storage=storage)
    assert study.metric_names == ["final_loss", "throughput"]
    assert study.user_attrs["spec"]["search"]["base_batch_size"] == 256
    assert {"tensorflow", "keras", "optuna", "tuner"} <= set(study.user_attrs["versions"])
    assert study.user_attrs["device_signatures"] == ["2x cpu"]


def test_export_points_at_a_complete_trial(small_study):
    work, url = small_study
    rec = json.loads((work / "rec.json").read_text())
    trials = {t.number: t for t in _trials(work, url)}
    chosen = trials[rec["trial_number"]]
    assert chosen.state == TrialState.COMPLETE
    assert rec["global_batch_size"] == chosen.params["global_batch_size"]
    assert rec["per_replica_batch_size"] * rec["num_replicas"] == rec["global_batch_size"]
    assert rec["lr_rule"] == chosen.params["lr_rule"]
    assert rec["throughput"] == pytest.approx(chosen.values[1], rel=1e-5)  # 6 digits
    for key in (
        "study_name",
        "devices",
        "learning_rate",
        "base_lr",
        "base_batch_size",
        "final_loss",
        "largest_feasible_batch_size",
        "oom_batch_sizes",
        "versions",
        "created_at",
    ):
        assert key in rec
    assert rec["largest_feasible_batch_size"] == 512 and rec["oom_batch_sizes"] == []
    # The single-device baseline (on by default) gives speedup and scaling efficiency.
    assert rec["baseline_throughput"] > 0
    assert rec["speedup_vs_single_device"] == pytest.approx(
        rec["throughput"] / rec["baseline_throughput"], rel=1e-4
    )
    assert rec["scaling_efficiency"] == pytest.approx(rec["speedup_vs_single_device"] / 2, rel=1e-4)

    exported = run_tuner("export", "--storage", url, "--study-name", "small", cwd=work)
    assert exported.returncode == 0, exported.stderr
    assert json.loads(exported.stdout)["trial_number"] == rec["trial_number"]


def test_show_prints_every_trial(small_study):
    work, url = small_study
    shown = run_tuner("show", "--storage", url, "--study-name", "small", cwd=work)
    assert shown.returncode == 0, shown.stderr
    rows = [line for line in shown.stdout.splitlines() if " ok " in line]
    assert len(rows) == 6


def test_resume_runs_nothing_new(small_study, tmp_path):
    work, url = small_study
    before = [(t.number, t.datetime_complete) for t in _trials(work, url)]
    again = run_tuner(
        "search",
        "--spec",
        str(work / "small.toml"),
        "--cpu-replicas",
        "2",
        "--storage",
        url,
        cwd=work,
        env=tuner_env(TUNER_WARM_CHILD="0"),  # only the check runs: no spare beside it
    )
    assert again.returncode == 0, again.stderr
    assert "nothing to run" in again.stderr
    assert [(t.number, t.datetime_complete) for t in _trials(work, url)] == before


def test_resume_with_a_different_spec_is_refused(small_study):
    work, url = small_study
    db = work / "small.db"
    digest = sha256(db)
    changed = run_tuner(
        "search",
        "--spec",
        str(work / "small.toml"),
        "--cpu-replicas",
        "2",
        "--storage",
        url,
        "--epochs",
        "3",
        cwd=work,
        env=tuner_env(TUNER_WARM_CHILD="0"),  # refused after the check: no spare beside it
    )
    assert changed.returncode == 2
    assert "different spec" in changed.stderr and "epochs" in changed.stderr
    assert "Traceback" not in changed.stderr
    assert sha256(db) == digest


def test_mnist_shaped_workload_trains(tmp_path):
    spec = Path(__file__).resolve().parents[2] / "studies" / "mnist-synthetic.toml"
    result = run_tuner(
        "search",
        "--spec",
        str(spec),
        "--cpu-replicas",
        "2",
        "--storage",
        "sqlite:///m.db",
        "--batch-multipliers",
        "8",
        "--lr-rules",
        "sqrt",
        "--epochs",
        "2",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    study = optuna.load_study(study_name="mnist-synthetic", storage=f"sqlite:///{tmp_path}/m.db")
    (loss,) = [t.values[0] for t in study.get_trials()]
    # Ten classes: chance-level cross-entropy is ln(10) = 2.30; the model learns well below it
    # (about 0.003 at batch 256).
    assert math.isfinite(loss) and loss < 1.0


def test_the_time_breakdown_adds_up_to_the_wall_time(small_study):
    work, url = small_study
    trained = [t for t in _trials(work, url) if decode(t).reuse.same_as is None]
    assert len(trained) == 4  # at batch 256 the three rules train once
    for trial in trained:
        timings = decode(trial).timings
        assert all(timings[p] >= 0 for p in PHASES), timings
        assert sum(timings[p] for p in PHASES) + timings["unaccounted_s"] == pytest.approx(
            timings["wall_s"]
        )
        # Every phase is measured on its own: what none of them saw is a small remainder.
        assert abs(timings["unaccounted_s"]) <= max(0.5, 0.05 * timings["wall_s"]), timings


def test_the_baseline_is_stored_on_the_study(small_study):
    work, url = small_study
    storage = optuna.storages.RDBStorage(url.replace("sqlite:///", f"sqlite:///{work}/"))
    study = optuna.load_study(study_name="small", storage=storage)
    (baseline,) = study.user_attrs["baselines"].values()
    assert baseline["status"] == "ok" and baseline["global_batch_size"] == 256
    assert baseline["devices"] == ["/cpu:0"] and baseline["throughput"] > 0
    assert len(study.trials) == 6  # the baseline is not a grid trial
