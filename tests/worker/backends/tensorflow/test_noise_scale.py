"""The gradient noise scale measured in real trials (two CPU replicas), against analytic truth;
goodput in the recommendation and the table. That ``--no-noise-scale`` skips the measurement is
asserted on the three children of ``tests/e2e/test_same_training.py``; the literature's
learning-rate rules as they reach the optimizer, in ``tests/e2e/test_export_training.py``."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest
from conftest import built_once, run_tuner
from tuner_test_workloads import ANALYTIC, ANALYTIC_P

from tuner.core.recommend import DEFAULT_TIE_MARGIN
from tuner.core.record import decode

pytestmark = pytest.mark.slow

SPEC = """
[study]
name = "{name}"

[workload]
model = "tuner_test_workloads:{model}"
data = "tuner_test_workloads:{data}"
loss = "mse"
optimizer = "{optimizer}"

[search]
base_batch_size = {base}
batch_multipliers = {multipliers}
lr_rules = {rules}
base_lr = {lr}
epochs = {epochs}
noise_scale_steps = {steps}
"""


def run(tmp_path, *extra, **fields):
    values = {
        "name": "t",
        "model": "plain_model",
        "data": "small_regression_data",
        "optimizer": "adam",
        "base": 256,
        "multipliers": "[1]",
        "rules": '["none"]',
        "lr": 1e-3,
        "epochs": 2,
        "steps": 8,
        **fields,
    }
    (tmp_path / "s.toml").write_text(SPEC.format(**values))
    result = run_tuner(
        "search",
        "--spec",
        "s.toml",
        "--storage",
        "sqlite:///s.db",
        "--no-baseline",
        "--export",
        "rec.json",
        *extra,
        cwd=tmp_path,
    )
    (tmp_path / "stdout.txt").write_text(result.stdout)
    assert result.returncode == 0, result.stderr
    study = optuna.load_study(study_name=values["name"], storage=f"sqlite:///{tmp_path}/s.db")
    return result, study.get_trials()


def run_analytic(tmp_path: Path, case: str, multipliers: str = "[1]"):
    """A search of the analytic problem ``case`` on two CPU replicas at base batch 2048."""
    return run(
        tmp_path,
        "--cpu-replicas",
        "2",
        model=f"analytic_model_{case}",
        data=f"analytic_data_{case}",
        optimizer="sgd",
        base=2048,
        multipliers=multipliers,
        lr=1e-20,
        steps=60,
    )


@pytest.fixture(scope="module")
def analytic_a(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Case ``a`` at batches 2048 and 4096, built once: the analytic truth is read at the base
    batch, and the two batches give the goodput test a choice."""
    return built_once(
        tmp_path_factory, "analytic-a", lambda work: run_analytic(work, "a", "[1, 2]")
    )


def trials_of(work: Path) -> list[optuna.trial.FrozenTrial]:
    return optuna.load_study(study_name="t", storage=f"sqlite:///{work}/s.db").get_trials()


@pytest.mark.parametrize("case", sorted(ANALYTIC))
def test_noise_scale_matches_the_analytic_truth(tmp_path, request, case):
    """Linear regression y = x·w* + ε, x ~ N(0, I_p), ε ~ N(0, σ²), MSE, a linear model without
    bias held at w = w* + d (learning rate ~0, so the weights do not move).

    Per example the loss is (x·d − ε)², so its gradient is 2(x·d − ε)x. Its mean is
    G = 2 E[(x·x)ᵀ]d = 2d, so |G|² = 4‖d‖². Its second moment is
    E[4(x·d − ε)² x xᵀ] = 4(E[(x·d)² x xᵀ] + σ² I) = 4(‖d‖² I + 2 d dᵀ + σ² I), whose trace is
    4((p + 2)‖d‖² + pσ²); minus |G|² = 4‖d‖² gives tr Σ = 4((p + 1)‖d‖² + pσ²). Hence
    B_simple = tr Σ / |G|² = ((p + 1)‖d‖² + pσ²) / ‖d‖².
    """
    d_squared, sigma_squared = ANALYTIC[case]
    truth = ((ANALYTIC_P + 1) * d_squared + ANALYTIC_P * sigma_squared) / d_squared
    if case == "a":  # shared with the goodput test
        trials = trials_of(request.getfixturevalue("analytic_a"))
    else:
        _, trials = run_analytic(tmp_path, case)
    (trial,) = [t for t in trials if t.params["global_batch_size"] == 2048]
    measured = decode(trial).result.gradient_noise_scale
    print(f"case {case}: B_simple measured {measured:.1f}, true {truth:.1f}")
    assert measured == pytest.approx(truth, rel=0.10)
    assert "critical_batch_size" not in decode(trial).flat  # it was only a copy of the above
    per_epoch = decode(trial).result.gradient_noise_scale_per_epoch
    assert len(per_epoch) == 2 and per_epoch[-1] == measured
    assert decode(trial).result.noise_scale_steps == 120
    assert decode(trial).result.statistical_efficiency == 1.0  # E(B₀) = 1 at the base batch
    assert decode(trial).result.goodput == pytest.approx(trial.values[1])
    assert decode(trial).timings["noise_scale_s"] > 0


def test_noise_scale_goodput_in_the_recommendation_and_the_table(analytic_a):
    trials = trials_of(analytic_a)
    assert len(trials) == 2
    assert all(decode(t).result.gradient_noise_scale is not None for t in trials)
    rec = json.loads((analytic_a / "rec.json").read_text())
    for key in ("gradient_noise_scale", "statistical_efficiency", "goodput"):
        assert rec[key] is not None, key
    stdout = (analytic_a / "stdout.txt").read_text()
    assert "B_noise" in stdout and "goodput" in stdout
    exported = run_tuner(
        "export", "--storage", "sqlite:///s.db", "--study-name", "t", "--policy", "goodput",
        cwd=analytic_a,
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    by_goodput = json.loads(exported.stdout)
    assert by_goodput["policy"] == "goodput"
    goodput = {t.number: decode(t).result.goodput for t in trials}
    batch = {t.number: t.params["global_batch_size"] for t in trials}
    best = max(by_goodput["candidates"], key=lambda n: goodput[n])
    chosen = by_goodput["trial_number"]
    # The best goodput, or a smaller batch within the tie margin of it (practically equal).
    assert chosen == best or (
        goodput[best] <= goodput[chosen] * (1 + DEFAULT_TIE_MARGIN) and batch[chosen] < batch[best]
    ), (chosen, goodput, batch)


def test_one_replica_says_the_noise_scale_needs_two(tmp_path):
    result, (trial,) = run(tmp_path, "--cpu-replicas", "1")
    assert "needs at least 2 replicas" in result.stderr
    assert decode(trial).result.noise_scale_note == (
        "the gradient noise scale needs at least 2 replicas"
    )
    assert decode(trial).result.gradient_noise_scale is None


def test_sqrt_adam_with_a_compiled_sgd_build_is_a_clear_error(tmp_path):
    (tmp_path / "s.toml").write_text(
        SPEC.format(
            name="t", model="compiled_mlp", data="small_regression_data", optimizer="adam",
            base=256, multipliers="[1]", rules='["sqrt-adam"]', lr=1e-3, epochs=2, steps=1,
        )
    )  # fmt: skip
    result = run_tuner("search", "--spec", "s.toml", "--storage", "sqlite:///s.db", cwd=tmp_path)
    assert result.returncode == 2
    assert "sqrt-adam" in result.stderr and "SGD" in result.stderr
    assert not (tmp_path / "s.db").exists()
