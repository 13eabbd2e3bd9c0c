"""The workload check's measurement step in a real search (issue 28, part 4): the custom
``train_step`` guide's lower-level model, compiled with an optimizer only, hides its loss from
the gradient noise meter. The search says so in one line before the grid, not once per trial,
and the trials train and store why the noise scale was skipped. (That a model the meter measures
gets no line is checked without a search: tests/worker/test_check_noise.py.)"""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from conftest import run_tuner

from tuner.core.record import decode
from tuner.worker.noise import HIDDEN_LOSS

pytestmark = pytest.mark.slow

SPEC = """
[study]
name = "t"

[workload]
model = "{model}"
data = "{data}"

[search]
base_batch_size = 64
batch_multipliers = [1, 2]
lr_rules = ["none"]
base_lr = 1e-3
epochs = 2
"""

LINE = f"the gradient noise scale will not be measured: {HIDDEN_LOSS}"


def search(tmp_path: Path, model: str, data: str) -> tuple[str, list[optuna.trial.FrozenTrial]]:
    """``tuner search`` on two CPU replicas, no baseline, the noise scale on (the default); its
    stderr and the trials, each COMPLETE."""
    (tmp_path / "s.toml").write_text(SPEC.format(model=model, data=data))
    result = run_tuner(
        "search", "--spec", "s.toml", "--cpu-replicas", "2", "--storage", "sqlite:///s.db",
        "--no-baseline", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr + result.stdout
    study = optuna.load_study(study_name="t", storage=f"sqlite:///{tmp_path}/s.db")
    trials = study.get_trials()
    assert len(trials) == 2
    for trial in trials:
        assert trial.state == optuna.trial.TrialState.COMPLETE, decode(trial).error
        assert decode(trial).throughput > 0
    return result.stderr, trials


def test_a_hidden_loss_is_said_once_before_the_grid_and_every_trial_trains(
    tmp_path: Path,
) -> None:
    stderr, trials = search(
        tmp_path, "guide_hidden_loss:build_model", "guide_hidden_loss:load_data"
    )
    assert stderr.count(LINE) == 1, stderr[-3000:]
    # Before the grid: the line comes before the first trial's.
    assert stderr.index(LINE) < stderr.index("trial 0 started"), stderr[-3000:]
    for trial in trials:
        assert decode(trial).result.noise_scale_skipped == HIDDEN_LOSS
        assert decode(trial).result.gradient_noise_scale is None
