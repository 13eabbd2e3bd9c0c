"""A real out-of-memory study: the oneDNN CPU allocator capped by --memory-limit."""

from __future__ import annotations

import optuna
import pytest
from conftest import WIDE, search_wide
from optuna.trial import TrialState

from tuner.core.record import decode

pytestmark = pytest.mark.slow


def test_out_of_memory_is_pruned_and_monotone(wide_study):
    tmp_path, _ = wide_study

    # Plain Optuna reads the study (no tuner involved).
    study = optuna.load_study(study_name="wide", storage=f"sqlite:///{tmp_path}/wide.db")
    trials = study.get_trials()
    assert not [t for t in trials if t.state == TrialState.RUNNING]
    by_status: dict[str, list[int]] = {}
    for trial in trials:
        by_status.setdefault(decode(trial).status, []).append(trial.params["global_batch_size"])

    # The small sizes train; the large ones end PRUNED as out-of-memory.
    assert sorted(by_status["ok"]) == [512, 512, 1024, 1024]
    oom_launched = by_status["oom"]
    assert len(oom_launched) == len(set(oom_launched)), "at most one oom launch per size"
    assert min(oom_launched) == 4096
    infeasible = sorted(oom_launched + by_status.get("oom-implied", []))
    assert infeasible == [4096, 4096, 8192, 8192]
    for trial in trials:
        if decode(trial).status in ("oom", "oom-implied"):
            assert trial.state == TrialState.PRUNED
            assert decode(trial).error
    oom_trial = next(t for t in trials if decode(t).status == "oom")
    assert "memory" in decode(oom_trial).error.lower() or "OOM" in decode(oom_trial).error
    smallest_oom = min(oom_launched)
    assert all(
        t.params["global_batch_size"] < smallest_oom
        for t in trials
        if t.state == TrialState.COMPLETE
    )

    import json

    rec = json.loads((tmp_path / "rec.json").read_text())
    assert rec["largest_feasible_batch_size"] == 1024
    assert rec["oom_batch_sizes"] == [4096, 8192]
    assert rec["global_batch_size"] in (512, 1024)


def test_probe_finds_the_boundary_and_search_skips_what_cannot_fit(tmp_path):
    (tmp_path / "wide.toml").write_text(
        WIDE.replace("base_batch_size = 512", "base_batch_size = 1024")
        .replace("batch_multipliers = [1, 2, 8, 16]", "batch_multipliers = [1, 2, 4, 8]")
        .replace('lr_rules = ["none", "sqrt"]', 'lr_rules = ["none"]')
    )
    result = search_wide(tmp_path, "probe.db", "--probe", "--no-baseline")
    assert result.returncode == 0, result.stderr
    study = optuna.load_study(study_name="wide", storage=f"sqlite:///{tmp_path}/probe.db")
    (probe,) = study.user_attrs["probes"].values()
    lo, hi = probe["largest_fitting_batch"], probe["smallest_oom_batch"]
    assert (lo, hi) == (2048, 4096)  # neighbours in the grid 1024, 2048, 4096, 8192
    assert probe["launches"] == 2  # bisection: 2048 fits, 4096 does not
    fits = {a["batch"]: a["fits"] for a in probe["attempts"]}
    assert fits[lo] and not fits[hi] and probe["launches"] == len(fits)  # capped: one size a child
    assert all(ok == (batch <= lo) for batch, ok in fits.items())  # monotone
    by_batch = {t.params["global_batch_size"]: t for t in study.trials}
    for batch, trial in by_batch.items():
        if batch >= hi:
            assert decode(trial).status == "oom-implied"
            assert "probe" in decode(trial).error
            assert not decode(trial).timings  # never launched
        else:
            assert trial.state == TrialState.COMPLETE
    assert "baselines" not in study.user_attrs
