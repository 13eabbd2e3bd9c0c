"""Precision as a grid axis, with real TensorFlow on two CPU replicas and real SQLite: one batch
and one rule at float32 and mixed_bfloat16 are two configurations, each trained in its own
child; the table shows the precision column and the export names the recommended precision."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest
from conftest import TESTS, run_tuner, toml_value

from tuner.core.record import decode

PRECISIONS = ["float32", "mixed_bfloat16"]


@pytest.mark.slow
def test_a_study_over_two_precisions_trains_each_and_exports_the_chosen_one(
    tmp_path: Path,
) -> None:
    # The built-in workload's spec, with the precisions and validation set `tuner search` reads
    # from the spec only. 4,096 of its samples: its 65,536 for two epochs, in bfloat16 on the
    # CPU, took most of this test's time and nothing here reads them.
    spec = (TESTS.parent / "studies" / "regression.toml").read_text(encoding="utf-8")
    extra = f"val_samples = 1024\nprecisions = {toml_value(PRECISIONS)}\n"
    (tmp_path / "p.toml").write_text(spec + extra, encoding="utf-8")
    searched = run_tuner(
        "search", "--spec", "p.toml", "--storage", "sqlite:///p.db", "--cpu-replicas", "2",
        "--no-baseline", "--no-noise-scale", "--base-batch-size", "64", "--batch-multipliers", "1",
        "--lr-rules", "none", "--train-samples", "4096",
        cwd=tmp_path,
    )  # fmt: skip
    assert searched.returncode == 0, searched.stderr
    study = optuna.load_study(study_name="regression", storage=f"sqlite:///{tmp_path}/p.db")
    trials = study.get_trials()
    assert len(trials) == 2 and all(t.state.name == "COMPLETE" for t in trials)
    assert sorted(t.params["precision"] for t in trials) == PRECISIONS
    for trial in trials:
        assert set(trial.params) == {"global_batch_size", "lr_rule", "precision"}
        # The child reports the policy it applied (with its device kind) over the driver's.
        assert decode(trial).configuration.precision == trial.params["precision"]
        assert decode(trial).result.device_kind == "cpu"
        assert decode(trial).reuse.same_as is None and bool(decode(trial).timings)  # own child
    assert len({decode(t).configuration.training_key for t in trials}) == 2

    shown = run_tuner("show", "--storage", "sqlite:///p.db", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "precision" in shown.stdout and "mixed_bfloat16" in shown.stdout

    exported = run_tuner(
        "export", "--storage", "sqlite:///p.db", "--output", "rec.json", cwd=tmp_path
    )
    assert exported.returncode == 0, exported.stderr
    rec = json.loads((tmp_path / "rec.json").read_text(encoding="utf-8"))
    chosen = next(t for t in trials if t.number == rec["trial_number"])
    assert rec["precision"] == chosen.params["precision"] == rec["compile"]["dtype_policy"]
    assert rec["compile"]["loss_scale_optimizer"] is False
    assert rec["largest_feasible_batch_size_by_precision"] == {p: 64 for p in PRECISIONS}
    assert rec["oom_batch_sizes_by_precision"] == {p: [] for p in PRECISIONS}
