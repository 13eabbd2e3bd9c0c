"""Real workloads through ``tuner search`` on two CPU replicas: every input form, sample budgets,
a fixed validation set, input-bound detection and bounded memory (one search), and bad inputs
refused. A TFRecord file read with a parse function is searched by the zoo (``tests/workloads``,
``tfrecord``: its sample budget used, not rebatched) and probed here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import optuna
import pytest
from conftest import run_tuner, sha256, tuner_env
from trials import write_small_study

from tuner.core.record import decode

pytestmark = pytest.mark.slow

SPEC = """
[study]
name = "{name}"

[workload]
model = "{model}"
{source} = "{reference}"
loss = "{loss}"
optimizer = "adam"

[search]
base_batch_size = {base}
batch_multipliers = {multipliers}
lr_rules = ["none"]
base_lr = 1e-3
{budget}
"""


def spec(
    path: Path,
    reference: str,
    *,
    source: str = "data",
    model: str = "tuner.workloads.regression:build_model",
    loss: str = "mse",
    base: int = 64,
    multipliers: str = "[1, 2]",
    budget: str = "train_samples = 3072\nval_samples = 512",
) -> Path:
    text = SPEC.format(
        name=path.stem,
        model=model,
        source=source,
        reference=reference,
        loss=loss,
        base=base,
        multipliers=multipliers,
        budget=budget,
    )
    path.write_text(text)
    return path


def search(
    tmp_path: Path, spec_path: Path, *extra: str, baseline: bool = False, **env: str
) -> tuple[Any, str]:
    db = f"sqlite:///{tmp_path / 'inputs.db'}"
    result = run_tuner(
        "search",
        "--spec",
        str(spec_path),
        "--cpu-replicas",
        "2",
        "--storage",
        db,
        "--baseline" if baseline else "--no-baseline",
        *extra,
        cwd=tmp_path,
        env=tuner_env(TUNER_CACHE=str(tmp_path / "cache"), **env),
    )
    return result, db


def trials(db: str, name: str) -> list[dict[str, Any]]:
    study = optuna.load_study(study_name=name, storage=db)
    return [decode(t).flat for t in sorted(study.trials, key=lambda t: t.number)]


def test_an_image_folder_is_rebatched_and_trials_see_the_same_samples(tmp_path: Path) -> None:
    path = spec(
        tmp_path / "images.toml",
        "tuner_test_workloads:image_folder_data",
        model="tuner_test_workloads:image_model",
        loss="sparse_categorical_crossentropy",
        base=16,
        budget="train_samples = 1536\nval_samples = 48",
    )
    result, db = search(tmp_path, path)
    assert result.returncode == 0, result.stderr
    found = trials(db, "images")
    assert [a["status"] for a in found] == ["ok", "ok"]
    assert all(a["input_rebatched"] and a["input_form"] == "datasets" for a in found)
    # The same sample budget at batch 16 and 32, and the same fixed validation set.
    assert {a["train_samples_used"] for a in found} == {1536}
    assert {a["val_samples_used"] for a in found} == {48}
    assert all(a["windows"] >= 6 and len(a["epoch_throughputs"]) == a["windows"] for a in found)
    assert all(a["input_throughput"] > 0 and isinstance(a["input_bound"], bool) for a in found)


def test_a_dataset_function_gets_the_per_replica_batch_and_an_input_context(
    tmp_path: Path,
) -> None:
    calls = tmp_path / "calls.jsonl"
    path = spec(
        tmp_path / "function.toml",
        "tuner_test_workloads:dataset_function",
        source="dataset",
        multipliers="[2]",
    )
    result, db = search(tmp_path, path, TUNER_TEST_DATASET_CALLS=str(calls))
    assert result.returncode == 0, result.stderr
    (attrs,) = trials(db, "function")
    assert attrs["status"] == "ok" and attrs["input_form"] == "function"
    logged = [json.loads(line) for line in calls.read_text().splitlines()]
    train = [c for c in logged if c["split"] == "train" and c["context"] is not None]
    # Global batch 128 on 2 replicas: the function batches at 64 per replica.
    assert train and all(c["batch_size"] == 64 for c in train)
    assert all(c["context"]["replicas"] == 2 for c in train)
    assert any(c["split"] == "val" and c["context"] is None for c in logged)
    assert "noise" in attrs.get("noise_scale_note", "")  # said why it is not measured


def test_a_billion_slow_virtual_samples_stay_in_bounded_memory_and_are_flagged_input_bound(
    tmp_path: Path,
) -> None:
    """10⁹ virtual samples behind a slow map: the sample budget bounds what the trial and the
    baseline read, and the pipeline, not the model, sets the pace. Arrays, which are not input
    bound, are asserted on the children of ``test_same_training.py``."""
    path = spec(
        tmp_path / "virtual.toml",
        "tuner_test_workloads:slow_virtual_datasets",
        multipliers="[1]",
        budget="train_samples = 3072\nval_samples = 512",  # nothing may read all 10⁹
    )
    result, db = search(tmp_path, path, baseline=True)  # the one-device baseline reads it too
    assert result.returncode == 0, result.stderr
    (attrs,) = trials(db, "virtual")
    assert attrs["status"] == "ok"
    assert attrs["peak_rss_bytes"] < 2 * 2**30
    assert attrs["train_samples_used"] <= 3072
    assert attrs["input_bound"] is True, attrs
    study = optuna.load_study(study_name="virtual", storage=db)
    (baseline,) = study.user_attrs["baselines"].values()
    assert baseline["status"] == "ok", baseline
    assert baseline["peak_rss_bytes"] < 2 * 2**30


@pytest.mark.parametrize(
    ("reference", "budget", "message"),
    [
        ("bad_element_datasets", "epochs = 2", "the elements are x alone, without targets y"),
        ("empty_datasets", "epochs = 2", "the train dataset is empty"),
        ("nan_datasets", "epochs = 2", "NaN or inf in x"),
        ("infinite_datasets", "epochs = 2", "are infinite: give [search] train_samples"),
        ("out_of_range_label_datasets", "train_samples = 1536\nval_samples = 32", "label value"),
    ],
)
def test_bad_inputs_exit_2_with_one_line_and_the_database_untouched(
    tmp_path: Path, reference: str, budget: str, message: str
) -> None:
    db_path = write_small_study(tmp_path / "inputs.db")  # a study that must stay as it was
    before = sha256(db_path)
    images = reference.startswith("out_of_range")
    path = spec(
        tmp_path / "bad.toml",
        f"tuner_test_workloads:{reference}",
        budget=budget,
        model="tuner_test_workloads:image_model"
        if images
        else "tuner.workloads.regression:build_model",
        loss="sparse_categorical_crossentropy" if images else "mse",
    )
    result, _ = search(tmp_path, path, TUNER_WARM_CHILD="0")  # no spare beside the check
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message in errors[0], result.stderr
    assert "Traceback" not in result.stderr
    assert sha256(db_path) == before


def test_validate_with_a_dataset_function_checks_what_it_can(tmp_path: Path) -> None:
    path = spec(
        tmp_path / "function.toml",
        "tuner_test_workloads:dataset_function",
        source="dataset",
        multipliers="[1]",
    )
    output = tmp_path / "validate.json"
    result = run_tuner(
        "validate",
        "--spec",
        str(path),
        "--cpu-replicas",
        "2",
        "--steps",
        "8",
        "--output",
        str(output),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    checks = json.loads(output.read_text())["checks"]
    assert checks["loss_parity"]["compared"] is False
    assert all(checks[name]["passed"] for name in ("weight_sync", "device_use", "learning_rate"))


def test_the_probe_reads_a_tfrecord_stream_for_a_few_steps(tmp_path: Path) -> None:
    path = spec(tmp_path / "records.toml", "tuner.workloads.records:load_data")
    db = f"sqlite:///{tmp_path / 'probe.db'}"
    result = run_tuner(
        "probe",
        "--spec",
        str(path),
        "--cpu-replicas",
        "2",
        "--storage",
        db,
        cwd=tmp_path,
        # One probe child, started beside the check: no spare for a next one.
        env=tuner_env(TUNER_CACHE=str(tmp_path / "cache"), TUNER_WARM_CHILD="check"),
    )
    assert result.returncode == 0, result.stderr
    study = optuna.load_study(study_name="records", storage=db)
    (probe,) = study.user_attrs["probes"].values()
    # No out-of-memory on the CPU: the probe doubles up to the sample budget's limit
    # (3,072 samples leave a trial 6 steps at global batch 512) and stops there.
    assert probe["largest_fitting_batch"] == 512 and probe["smallest_oom_batch"] is None
