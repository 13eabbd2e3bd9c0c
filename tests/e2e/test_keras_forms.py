"""Data and models as Keras's examples write them (issue 28), searched on two CPU replicas: dicts
of arrays on JAX, a model that takes raw strings, a ``Sequential`` without ``keras.Input``; a model
that cannot take the data is one exit-2 line with Keras's own message. Dicts of arrays on
TensorFlow are the zoo's ``dict_arrays`` setup (``tests/workloads``), which asserts the input form
too."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from conftest import run_tuner, tuner_env

from tuner.core.record import decode

pytestmark = pytest.mark.slow

SPEC = """
[study]
name = "t"

[workload]
model = "{model}"
data = "{data}"
loss = "{loss}"
optimizer = "adam"

[search]
base_batch_size = 64
batch_multipliers = [{multipliers}]
lr_rules = ["none"]
base_lr = 1e-3
epochs = 2
"""

FORMS = "e2e.keras_forms"


def search(
    tmp_path: Path,
    model: str,
    data: str,
    *flags: str,
    loss: str = "mse",
    multipliers: str = "1",
    warm: str = "1",
) -> tuple[str, str, int]:
    """``tuner search`` on two CPU replicas, no baseline, no noise scale; (stdout, stderr, code).
    ``warm``: ``TUNER_WARM_CHILD`` (``0`` where the check refuses: no spare child beside it)."""
    spec = SPEC.format(model=model, data=data, loss=loss, multipliers=multipliers)
    (tmp_path / "s.toml").write_text(spec)
    result = run_tuner(
        "search", "--spec", "s.toml", "--cpu-replicas", "2", "--storage", "sqlite:///s.db",
        "--no-baseline", "--no-noise-scale", *flags, cwd=tmp_path,
        env=tuner_env(TUNER_WARM_CHILD=warm),
    )  # fmt: skip
    assert "Traceback" not in result.stderr + result.stdout
    return result.stdout, result.stderr, result.returncode


def completed(tmp_path: Path) -> list[optuna.trial.FrozenTrial]:
    study = optuna.load_study(study_name="t", storage=f"sqlite:///{tmp_path}/s.db")
    trials = study.get_trials()
    assert trials
    for trial in trials:
        assert trial.state == optuna.trial.TrialState.COMPLETE, decode(trial).error
        assert decode(trial).throughput > 0
    return trials


def test_a_model_on_raw_strings_trains_on_two_replicas(tmp_path: Path) -> None:
    """The text-classification example's end-to-end model on string arrays: strings stay
    strings through the check and the trial."""
    model, data = f"{FORMS}:text_model", f"{FORMS}:text_arrays"
    _, stderr, code = search(tmp_path, model, data, loss="binary_crossentropy")
    assert code == 0, stderr
    completed(tmp_path)


def test_ragged_data_on_two_replicas_is_one_exit_2_line_before_the_grid(tmp_path: Path) -> None:
    """Keras's fit under MirroredStrategy cannot take ragged tensors on several replicas: the
    workload check knows the replicas and refuses them with what to do, nothing stored."""
    model, data = f"{FORMS}:ragged_model", f"{FORMS}:ragged_datasets"
    _, stderr, code = search(tmp_path, model, data, multipliers="1, 2", warm="0")
    assert code == 2, stderr
    (line,) = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert "the data hold ragged tensors" in line and "pad them in the data" in line
    assert not (tmp_path / "s.db").exists()


def test_the_same_failure_at_a_second_point_stops_the_search(tmp_path: Path) -> None:
    """A layer that refuses to run under a strategy passes the check (one device) and fails
    every trial with the same line: the search stops after the second of three points, the two
    trials stored."""
    model, data = f"{FORMS}:one_device_model", f"{FORMS}:ten_features_data"
    # No spare child for a next run: the third point's would be killed unused.
    _, stderr, code = search(tmp_path, model, data, multipliers="1, 2, 4", warm="check")
    assert code == 1, stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("error: trials #0 and #1 failed with the same error"), stderr
    assert "OneDeviceOnly was written for one device" in last
    study = optuna.load_study(study_name="t", storage=f"sqlite:///{tmp_path}/s.db")
    assert [t.state.name for t in study.get_trials()] == ["FAIL", "FAIL"]  # the third not run


def test_a_wrong_input_shape_is_one_exit_2_line_with_keras_own_message(tmp_path: Path) -> None:
    _, stderr, code = search(
        tmp_path, f"{FORMS}:ten_features_model", f"{FORMS}:twenty_features_data", warm="0"
    )
    assert code == 2, stderr
    lines = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, stderr
    assert "expected axis -1 of input shape to have value 10" in lines[0]
    assert "received input with shape (8, 20)" in lines[0]
    assert "ValueError: ValueError" not in lines[0] and "kwargs=" not in lines[0]
    assert not (tmp_path / "s.db").exists()  # refused before anything was stored


def test_a_sequential_without_input_starts_every_run_from_the_same_weights(
    tmp_path: Path,
) -> None:
    """Two searches of the same configuration: the same first-window loss, to the last digit
    (each built the model on the first inputs before recording its initial weights)."""
    losses = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        model, data = (
            "tuner_test_workloads:sequential_without_input",
            f"{FORMS}:twenty_features_data",
        )
        _, stderr, code = search(tmp_path / name, model, data)
        assert code == 0, stderr
        (trial,) = completed(tmp_path / name)
        losses.append(decode(trial).result.epoch_losses[0])
    assert losses[0] == losses[1]


def test_dicts_of_arrays_train_on_jax(tmp_path: Path) -> None:
    model, data = f"{FORMS}:dict_arrays_model", f"{FORMS}:dict_arrays_data"
    _, stderr, code = search(tmp_path, model, data, "--backend", "jax")
    assert code == 0, stderr
    (trial,) = completed(tmp_path)
    assert decode(trial).result.backend == "jax"
