"""KerasTuner hypermodels through ``tuner search``, unchanged, on two CPU replicas: a ``build(hp)``
function, a ``HyperModel`` class and an instance, each searched once."""

from __future__ import annotations

import json
import sys

import optuna
import pytest
from conftest import TESTS, WIDE, run_tuner, search_wide, tuner_env
from optuna.trial import TrialState

from tuner.core.record import decode
from tuner.driver.setup.opening import DIRECTIONS
from tuner.driver.setup.spec_file import load_spec

pytestmark = pytest.mark.slow

SPEC = """
[study]
name = "hyper"

[workload]
model = "tuner_test_workloads:{model}"
data = "tuner_test_workloads:small_regression_data"
loss = "mse"
optimizer = "adam"

[search]
base_batch_size = 256
batch_multipliers = {multipliers}
lr_rules = {rules}
base_lr = 1e-3
epochs = 2
model_hyperparameters = "{mode}"
trials = {trials}
"""


def search(
    tmp_path,
    model="tuned_mlp",
    mode="defaults",
    multipliers="[1]",
    rules='["none"]',
    trials=4,
    warm="1",
):
    """``tuner search`` of the hypermodel spec; ``warm``: ``TUNER_WARM_CHILD`` (``0`` where the
    check refuses, so that no spare child starts beside it)."""
    spec = SPEC.format(model=model, mode=mode, multipliers=multipliers, rules=rules, trials=trials)
    (tmp_path / "hyper.toml").write_text(spec)
    return run_tuner(
        "search",
        "--spec",
        "hyper.toml",
        "--cpu-replicas",
        "2",
        "--storage",
        "sqlite:///h.db",
        "--no-baseline",
        "--export",
        "rec.json",
        cwd=tmp_path,
        env=tuner_env(TUNER_WARM_CHILD=warm),
    )


def rebuilt(snippet: str) -> tuple[int, list[str]]:
    """Run the recommendation's KerasTuner snippet: the parameter count and the layers (class,
    units, activation, rate) of what it builds."""
    from tuner.worker.hypermodel import layer_summary

    scope: dict = {}
    sys.path.insert(0, str(TESTS))
    try:
        exec(snippet, scope)
    finally:
        sys.path.remove(str(TESTS))
    return int(scope["model"].count_params()), layer_summary(scope["model"])


def trained(trial) -> tuple[int, list[str]]:
    return decode(trial).result.model_parameters, decode(trial).result.model_layers


def test_defaults_mode_builds_kerastuner_defaults_and_runs_the_grid(tmp_path):
    """A ``build(hp)`` function that compiles its model: KerasTuner's defaults over the grid, the
    build's own loss and optimizer kept, the rule's learning rate put in its optimizer."""
    result = search(tmp_path, model="compiled_mlp", multipliers="[1, 2]", rules='["linear"]')
    assert result.returncode == 0, result.stderr
    study = optuna.load_study(study_name="hyper", storage=f"sqlite:///{tmp_path}/h.db")
    trials = study.get_trials()
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 2
    defaults = {"units": 16, "activation": "relu", "l2": 1e-6, "dropout": False}
    for trial in trials:
        assert {k: trial.params[k] for k in defaults} == defaults  # stored as params
        assert decode(trial).configuration.model_hyperparameters == defaults
        assert "rate" not in trial.params  # conditional on dropout, which is off
    space = [e["config"]["name"] for e in study.user_attrs["hypermodel"]["space"]]
    assert space == ["units", "activation", "l2", "dropout", "rate"]  # "rate" discovered too
    rec = json.loads((tmp_path / "rec.json").read_text())
    assert rec["model_hyperparameters"] == defaults
    chosen = study.trials[rec["trial_number"]]
    assert rebuilt(rec["keras_tuner_snippet"]) == trained(chosen)
    assert rec["keras_tuner_snippet"].endswith("model = compiled_mlp(hp)\n")

    # The build compiles with SGD (momentum 0.7) at a learning rate of 0.5: the optimizer is
    # kept, its learning rate is the linear rule's at each batch.
    (trial,) = [t for t in trials if t.params["global_batch_size"] == 512]
    optimizer = decode(trial).result.optimizer
    assert optimizer["class"] == "SGD" and optimizer["from_build"] is True
    assert optimizer["momentum"] == pytest.approx(0.7)  # the user's setting is kept
    lr = decode(trial).learning_rate
    assert lr == pytest.approx(2e-3)  # linear rule at 2× the base batch, not the build's 0.5
    assert optimizer["learning_rate"] == pytest.approx(lr)
    assert decode(trial).result.optimizer_learning_rate == pytest.approx(lr)


def test_search_mode_samples_model_hyperparameters_with_batch_and_rule(tmp_path):
    """A ``HyperModel`` class, searched jointly with the batch and the rule."""
    result = search(
        tmp_path, model="TunedMLP", mode="search", multipliers="[1, 2]", rules='["none", "sqrt"]',
        trials=3,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    study = optuna.load_study(study_name="hyper", storage=f"sqlite:///{tmp_path}/h.db")
    trials = study.get_trials()
    assert len(trials) == 3 and all(t.state == TrialState.COMPLETE for t in trials)
    configs = {
        json.dumps(decode(t).configuration.model_hyperparameters, sort_keys=True) for t in trials
    }
    assert len(configs) >= 2, "the model hyperparameters were not searched"
    for trial in trials:
        values = decode(trial).configuration.model_hyperparameters
        assert {k: trial.params[k] for k in values} == values
        assert ("rate" in values) == values["dropout"]
        assert trial.params["global_batch_size"] in (256, 512)
    rec = json.loads((tmp_path / "rec.json").read_text())
    chosen = study.trials[rec["trial_number"]]
    assert rec["model_hyperparameters"] == decode(chosen).configuration.model_hyperparameters
    assert rebuilt(rec["keras_tuner_snippet"]) == trained(chosen)
    assert rec["keras_tuner_snippet"].endswith("model = TunedMLP().build(hp)\n")
    assert "model" in result.stdout and "units=" in result.stdout  # the table shows them

    # Resuming with a larger budget runs only the difference (one run: only the check's spare).
    again = search(
        tmp_path, model="TunedMLP", mode="search", multipliers="[1, 2]", rules='["none", "sqrt"]',
        trials=4, warm="check",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert (
        len(optuna.load_study(study_name="hyper", storage=f"sqlite:///{tmp_path}/h.db").trials) == 4
    )


def test_search_mode_needs_a_hypermodel(tmp_path):
    result = search(tmp_path, model="plain_model", mode="search", warm="0")
    assert result.returncode == 2
    assert "needs a KerasTuner hypermodel" in result.stderr


def test_out_of_memory_is_monotone_per_model_configuration(tmp_path):
    """A ``HyperModel`` instance whose width is searched: out-of-memory implies larger batches of
    the same width only. Three points are queued before the search, in a study made as tuner
    makes one (its spec stored), so that one search runs them."""
    spec = WIDE.replace("tuner_test_workloads:wide_model", "e2e.hypermodels:wide_instance")
    spec = spec.replace("base_batch_size = 512", "base_batch_size = 4096")
    spec = spec.replace("batch_multipliers = [1, 2, 8, 16]", "batch_multipliers = [1, 2]")
    spec = spec.replace('lr_rules = ["none", "sqrt"]', 'lr_rules = ["none"]')
    (tmp_path / "wide.toml").write_text(spec + 'model_hyperparameters = "search"\ntrials = 3\n')
    url = f"sqlite:///{tmp_path}/w.db"
    study = optuna.create_study(study_name="wide", storage=url, directions=DIRECTIONS)
    study.set_user_attr("spec", load_spec(tmp_path / "wide.toml").to_dict())
    for width, batch in [(8192, 4096), (8192, 8192), (256, 8192)]:
        study.enqueue_trial({"width": width, "global_batch_size": batch, "lr_rule": "none"})
    result = search_wide(tmp_path, "w.db", "--no-baseline")
    assert result.returncode == 0, result.stderr

    study = optuna.load_study(study_name="wide", storage=url)
    assert study.user_attrs["hypermodel"]["kind"] == "instance"
    trials = study.get_trials()
    assert len(trials) == 3
    by_point: dict[tuple[int, int], list[str]] = {}
    for trial in trials:
        key = (trial.params["width"], trial.params["global_batch_size"])
        by_point.setdefault(key, []).append(decode(trial).status)
    assert by_point[(8192, 4096)][-1] == "oom"
    assert "oom-implied" in by_point[(8192, 8192)]  # the same model at a larger batch
    assert by_point[(256, 8192)][-1] == "ok"  # another model: not implied, it fits
    launched_oom = [t for t in trials if decode(t).status == "oom"]
    assert len(launched_oom) == len({t.params["global_batch_size"] for t in launched_oom})
