"""Data and workloads that cannot train, through the real ``tuner search`` on two CPU replicas:
each ends with a line that says what is wrong, not with TensorFlow's noise or a hint to run the
command just run."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_tuner

from tuner.worker.check import SCAN_SAMPLES

pytestmark = pytest.mark.slow

SPEC = """
[study]
name = "{name}"

[workload]
model = "{model}"
data = "{data}"
loss = "{loss}"
optimizer = "adam"

[search]
base_batch_size = 64
batch_multipliers = [1]
lr_rules = ["none"]
base_lr = 1e-3
epochs = 2
"""


def search(
    tmp_path: Path,
    data: str,
    *flags: str,
    model: str = "tuner.workloads.regression:build_model",
    loss: str | None = "mse",
) -> tuple[str, str, int]:
    """``tuner search`` of a one-point grid (no baseline); (stdout, stderr, exit code). ``loss``
    ``None``: the spec names none (the build's compile gives it, or none)."""
    spec = SPEC.format(name="bad", model=model, data=data, loss=loss)
    if loss is None:
        spec = spec.replace('loss = "None"\n', "")
    (tmp_path / "bad.toml").write_text(spec)
    result = run_tuner(
        "search",
        "--spec",
        "bad.toml",
        "--cpu-replicas",
        "2",
        "--storage",
        "sqlite:///bad.db",
        "--no-baseline",
        "--no-noise-scale",
        *flags,
        cwd=tmp_path,
    )
    assert "Traceback" not in result.stderr + result.stdout
    return result.stdout, result.stderr, result.returncode


def test_all_nan_labels_are_refused_by_the_check_with_the_array_and_the_count(
    tmp_path: Path,
) -> None:
    _, stderr, code = search(tmp_path, "tuner_test_workloads:nan_label_data")
    assert code == 2, stderr
    assert (
        f"error: tuner_test_workloads:nan_label_data: NaN or inf in y ({SCAN_SAMPLES} of "
        f"{SCAN_SAMPLES} values in train)"
    ) in stderr
    assert not (tmp_path / "bad.db").exists()  # refused before anything was stored


def test_a_study_whose_trials_all_diverge_says_so_and_why(tmp_path: Path) -> None:
    stdout, stderr, code = search(
        tmp_path, "tuner_test_workloads:small_regression_data", "--base-lr", "1e12"
    )
    assert code == 1, stderr
    assert "diverged" in stdout  # the table shows the trial
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("error: every trial of study 'bad' diverged: 1 trial(s) at learning ")
    assert "learning rate too high" in last and "bad data" in last
    assert "tuner search` first" not in stderr
    exported = run_tuner(
        "export", "--storage", "sqlite:///bad.db", "--study-name", "bad", cwd=tmp_path
    )
    assert exported.returncode == 1
    assert "every trial of study 'bad' diverged" in exported.stderr
    assert "tuner search` first" not in exported.stderr


def test_a_module_that_exits_while_importing_is_named(tmp_path: Path) -> None:
    # A training script whose top level exits (argparse, say) before it defines the function.
    (tmp_path / "quits.py").write_text(
        "import sys\n\nsys.exit(7)\n\n\ndef load_data():\n    pass\n"
    )
    _, stderr, code = search(tmp_path, "quits:load_data")
    assert code == 2, stderr
    assert stderr.strip().splitlines()[-1] == (
        "error: module 'quits' exited with code 7 while importing ('quits:load_data')"
    )


def test_a_label_mismatch_in_training_names_the_op_and_the_shapes(tmp_path: Path) -> None:
    _, stderr, code = search(
        tmp_path,
        "tuner_test_workloads:class_label_data",
        model="tuner_test_workloads:folding_in_training_model",
        loss="sparse_categorical_crossentropy",
    )
    # The check trains one real step (8 samples): a bug only in training is caught before the
    # grid, with TensorFlow's line that names the op and the shapes.
    assert code == 2, stderr
    assert stderr.strip().splitlines()[-1] == (
        "error: model tuner_test_workloads:folding_in_training_model does not fit data "
        "tuner_test_workloads:class_label_data (x (10,), y ()): InvalidArgumentError: logits and "
        "labels must have the same first dimension, got logits shape [16,10] and labels shape [8]"
    )
    assert not (tmp_path / "bad.db").exists()


def test_a_model_whose_loss_lives_in_train_step_is_told_its_evaluation_fails(
    tmp_path: Path,
) -> None:
    # keras-io's VAE: compile names an optimizer only, train_step computes and reports the loss,
    # evaluate has none to compute. The check (one child) says that evaluation failed, what to
    # override, and offers the training loss with its caveat; no trial runs.
    _, stderr, code = search(
        tmp_path,
        "tuner_test_workloads:vae_digits",
        model="tuner_test_workloads:vae_model",
        loss=None,
    )
    assert code == 2, stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith(
        "error: model tuner_test_workloads:vae_model trains on data "
        "tuner_test_workloads:vae_digits, but its evaluation fails: "
    )
    assert "override test_step" in last
    assert 'set [workload] objective = "loss"' in last and "cannot show overfitting" in last
    assert not (tmp_path / "bad.db").exists()  # refused before anything was stored
