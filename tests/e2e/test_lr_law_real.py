"""``--lr-sweep`` with real TensorFlow on two CPU replicas and real SQLite (issue 32): three
learning rates at each of two batches of the noisy quadratic model, trained in their own
children; the export carries the measured law, and the recommended rate is the measured ``lr*``
at the recommended batch. The sweep's early stops: the rate 2.4 at batch 64 (past SGD's stability
edge, rate 1) stops early, dominated by the best rate at its own batch (or diverged), and counts
in the law as a rate known worse — a wall that brackets lr* there — not as a final loss. The
adaptive sweep: at batch 64 the rate 0.6 beats the none rule's 0.3 (the exact losses: 0.034
against 0.12), so 0.15, beyond 0.3, cannot be the best and is not trained (``bracketed``); the
law is fitted there all the same."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest
from conftest import run_tuner

from tuner.core.record import decode

SPEC = """
[study]
name = "nqm"

[workload]
model = "tuner.workloads.noisy_quadratic:build_model"
data = "tuner.workloads.noisy_quadratic:load_data"
loss = "mse"
optimizer = "sgd"

[search]
base_batch_size = 16
batch_multipliers = [1, 4]
lr_rules = ["none"]
base_lr = 0.3
train_samples = 1024
val_samples = 2048
"""


@pytest.mark.slow
def test_a_sweep_of_three_rates_exports_the_measured_law(tmp_path: Path) -> None:
    (tmp_path / "nqm.toml").write_text(SPEC, encoding="utf-8")
    searched = run_tuner(
        "search", "--spec", "nqm.toml", "--storage", "sqlite:///s.db", "--cpu-replicas", "2",
        "--no-baseline", "--no-noise-scale", "--lr-sweep", "3", "--export", "rec.json",
        "--seeds", "2",  # the seed noise: the early stops' test needs it (one seed run more)
        cwd=tmp_path,
    )  # fmt: skip
    assert searched.returncode == 0, searched.stderr
    study = optuna.load_study(study_name="nqm", storage=f"sqlite:///{tmp_path}/s.db")
    rules = {(t.params["global_batch_size"], t.params["lr_rule"]) for t in study.get_trials()}
    assert rules == {
        (b, r) for b in (16, 64) for r in ("none", "sweep-1/3", "sweep-2/3", "sweep-3/3")
    }
    by_point = {(t.params["global_batch_size"], t.params["lr_rule"]): t for t in study.trials}
    rates = {point: decode(t).learning_rate for point, t in by_point.items()}
    # Half the none rate to twice the linear one, log-spaced: at 4x the base batch, 0.15 to 2.4.
    assert rates[(64, "sweep-1/3")] == pytest.approx(0.15)
    assert rates[(64, "sweep-2/3")] == pytest.approx(0.6)
    assert rates[(64, "sweep-3/3")] == pytest.approx(2.4)

    skipped = by_point[64, "sweep-1/3"]
    assert decode(skipped).status == "bracketed" and skipped.state.name == "PRUNED"
    assert decode(skipped).result.train_samples_used is None  # never trained
    assert all(decode(by_point[16, r]).flat["status"] != "bracketed" for r in ("sweep-1/3", "none"))

    stopped = by_point[64, "sweep-3/3"]
    assert decode(stopped).status in ("dominated", "diverged")
    assert decode(stopped).result.train_samples_used < 1024  # stopped early: samples saved
    reference = decode(stopped).flat.get("dominance", {}).get("reference_trial")
    if reference is not None:  # the best at its own batch, not batch 16's
        assert study.trials[reference].params["global_batch_size"] == 64

    rec = json.loads((tmp_path / "rec.json").read_text(encoding="utf-8"))
    law = rec["lr_law"]
    if decode(stopped).status == "dominated":
        assert law["stopped_points_by_batch"]["64"] >= 1
    assert "64" not in law["censored_batches"]  # bracketed by the stopped rate, not a bound
    assert set(law["lr_star_by_batch"]) == {"16", "64"}
    assert law["regime"] in ("power-law", "unresolved")
    assert law["words"]
    lo, hi = law["lr_star_ci_by_batch"]["16"]
    assert lo <= law["lr_star_by_batch"]["16"] <= hi
    # The noisy quadratic's exact best rate at batch 16 is 0.33: inside the sweep's 0.15-0.6.
    assert 0.15 < law["lr_star_by_batch"]["16"] < 0.6
    if law["alpha"] is not None:
        assert law["alpha_ci"][0] <= law["alpha"] <= law["alpha_ci"][1]
    batch = str(rec["global_batch_size"])
    if batch in law["lr_star_by_batch"] and batch not in law["censored_batches"]:
        assert rec["learning_rate_source"] == "lr_law"
        assert rec["learning_rate"] == pytest.approx(law["lr_star_by_batch"][batch], rel=1e-5)
        optimizer = rec["recommended"]["optimizer"]["config"]
        assert optimizer["learning_rate"] == pytest.approx(rec["learning_rate"], rel=1e-5)
