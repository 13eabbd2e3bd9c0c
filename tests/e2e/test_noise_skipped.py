"""Side measurements never fail a trial, and use Keras's API (issue 28): models written as Keras's
guides write them, searched on two CPU replicas with the noise scale on. The noise meter measures
them through ``model.compute_loss`` — several inputs and outputs, loss weights, sample weights —
and the trials complete: here on JAX; on TensorFlow the zoo's setups assert it
(``tests/workloads/setups.py``, ``noise_measured``)."""

from __future__ import annotations

import optuna
import pytest
from conftest import run_tuner

from tuner.core.record import decode

pytestmark = pytest.mark.slow

SPEC = """
[study]
name = "t"

[workload]
model = "tuner_test_workloads:{model}"
{data}
loss = "mse"
optimizer = "adam"

[search]
base_batch_size = 128
batch_multipliers = [1]
lr_rules = ["none"]
base_lr = 1e-3
epochs = 2
noise_scale_steps = 2
"""


def search(tmp_path, model: str, data: str, *flags: str) -> list[optuna.trial.FrozenTrial]:
    (tmp_path / "s.toml").write_text(SPEC.format(model=model, data=data))
    result = run_tuner(
        "search",
        "--spec",
        "s.toml",
        "--storage",
        "sqlite:///s.db",
        "--no-baseline",
        "--cpu-replicas",
        "2",
        *flags,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    trials = optuna.load_study(study_name="t", storage=f"sqlite:///{tmp_path}/s.db").get_trials()
    assert trials
    for trial in trials:
        assert trial.state == optuna.trial.TrialState.COMPLETE, decode(trial).error
        assert decode(trial).status == "ok"
        assert decode(trial).throughput > 0
    return trials


def test_a_multi_input_multi_output_model_with_sample_weights_is_measured_on_jax(tmp_path):
    """The functional-API guide's model: dict inputs, two outputs with a loss and a loss weight
    each, ``(x, y, sample_weight)`` elements (skipped before issue 28, part 2). On TensorFlow the
    zoo's setups assert it: ``multi_io`` and ``sequential_no_input`` (a ``Sequential`` without
    ``keras.Input``, measured once training built it) get a value, ``sample_weights`` is
    measured on its steps; ``tests/worker/backends/tensorflow/test_noise_keras_api.py`` checks
    this model's per-replica gradients."""
    data = 'data = "tuner_test_workloads:guide_multi_io_datasets"'
    trials = search(tmp_path, "guide_multi_io_model", data, "--backend", "jax")
    for trial in trials:
        assert decode(trial).result.noise_scale_skipped is None
        assert decode(trial).result.gradient_noise_scale > 0
        assert decode(trial).result.noise_scale_steps == 4
