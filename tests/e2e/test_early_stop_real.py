"""Early stops of dominated trials through the real ``tuner search`` on two CPU replicas (real
TensorFlow, real SQLite): the base configuration's seeds run before the rest of the grid, the
batch-256 points (one at 4x the learning rate) stop as ``dominated`` with their evidence, the
recommendation is the base configuration, and the seed runs — A/A runs of the reference, the same
configuration with other seeds — would not have been stopped by the same check."""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path

import optuna
import pytest
from conftest import run_tuner

from tuner.core.record import decode
from tuner.core.spec import spec_from_dict
from tuner.core.target import CheckPlan
from tuner.driver.decide.early_stop import early_stop_for
from tuner.driver.decide.seeds import SEED_NOISE
from tuner.worker.target import TargetCheck

pytestmark = pytest.mark.slow

SPEC = """
[study]
name = "es"

[workload]
model = "early_stop_workloads:build_model"
data = "early_stop_workloads:load_data"
loss = "mse"
optimizer = "adam"

[search]
base_batch_size = 64
batch_multipliers = [1, 4]
lr_rules = ["none", "linear"]
base_lr = 0.05
train_samples = 8192
"""
BUDGET = 8192


def test_dominated_points_stop_and_a_a_runs_do_not(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(SPEC)
    args = ("--spec", "s.toml", "--storage", "sqlite:///s.db", "--cpu-replicas", "2")
    result = run_tuner(
        "search", *args, "--no-baseline", "--seeds", "3", "--max-repeats", "1", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    study = optuna.load_study(study_name="es", storage=f"sqlite:///{tmp_path}/s.db")
    trials = study.get_trials()
    by_point = {(t.params["global_batch_size"], t.params["lr_rule"]): t for t in trials}
    base = by_point[64, "linear"]  # the grid's first at batch 64 (none copies it: ratio 1)
    assert decode(base).status == "ok" and decode(base).decision.dominance is None
    assert decode(base).decision.early_stop_skipped.startswith(
        "no early stop: "
    )  # nothing before it

    saved = 0
    for rule in ("none", "linear"):  # linear: 4 x the rate; none: too few steps at 4 x the batch
        trial = by_point[256, rule]
        attrs = decode(trial).flat
        assert trial.state == optuna.trial.TrialState.PRUNED and attrs["status"] == "dominated"
        evidence = attrs["dominance"]
        assert evidence["rule"] == "loss-gap" and evidence["reference_trial"] == base.number
        assert evidence["alpha"] == 0.05 and evidence["noise_runs"] == 3
        assert (
            evidence["lower_bound"] > 0
            and evidence["statistic"]
            > evidence["critical"] / (2**0.5 * evidence["noise_sd"]) - 1e-9
        )
        assert evidence["samples"] < BUDGET and evidence["samples_saved"] > 0
        assert attrs["train_samples_used"] == evidence["samples"]
        assert attrs["error"].startswith(f"dominated: at {evidence['samples']} of {BUDGET}")
        saved += evidence["samples_saved"]
    assert saved >= BUDGET // 2

    shown = run_tuner("show", "--storage", "sqlite:///s.db", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.count("dominated") >= 2
    exported = run_tuner("export", "--storage", "sqlite:///s.db", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert '"global_batch_size": 64' in exported.stdout

    _seed_runs_are_not_stopped(study, base)


def _seed_runs_are_not_stopped(study: optuna.Study, base: optuna.trial.FrozenTrial) -> None:
    """Each seed run's recorded curve, checked as the worker checks a trial against the grid's
    base trial (the same configuration, seed 0), with the noise the study stored: no stop."""
    record = next(iter(study.user_attrs[SEED_NOISE].values()))
    assert len(record["curves"]) == 2  # seeds 1 and 2 (seed 0 is the grid's own trial)
    raw = tomllib.loads(SPEC)
    spec = spec_from_dict({**raw, "search": {**raw["search"], "seeds": 3}})
    stop, skipped = early_stop_for(
        spec,
        decode(base).configuration.device_signature,
        lambda: study.user_attrs[SEED_NOISE],
        [base],
    )
    assert skipped is None and stop is not None and stop.reference_trial == base.number
    for curve in record["curves"]:
        losses = functools.partial(next, iter([float(loss) for _, loss in curve]))
        check = TargetCheck(CheckPlan(int(curve[0][0]), 1, len(curve)), None, losses, stop)
        assert all(check() for _ in curve[:-1]) and check.dominance is None
