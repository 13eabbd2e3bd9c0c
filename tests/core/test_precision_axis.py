"""Precision as a grid axis, in the pure core and the views: grid points and configurations
cross precisions, out-of-memory implies nothing across precisions, two trainings at different
precisions are different, and the recommendation, its JSON and the tables name the precision."""

from __future__ import annotations

from typing import Any

from optuna.distributions import CategoricalDistribution
from optuna.trial import FrozenTrial, TrialState, create_trial
from trials import BATCHES, DISTRIBUTIONS, SIGNATURE, make_trial, run_recommend

from tuner.core.configurations import (
    feasibility_by_precision,
    grid_point,
    infeasible_batch_sizes,
    precision_of,
    smallest_oom_batch,
    unique_trials,
)
from tuner.core.recommend._export import export_document
from tuner.core.sameness import training_key
from tuner.core.trials import GridProgress, run_key, settled_grid_points
from tuner.views.recommendation import recommendation_rows
from tuner.views.summary import TRIAL_COLUMNS, trial_layout, trial_rows

PRECISIONS = ["float32", "mixed_bfloat16"]


def at(
    number: int,
    batch: int,
    precision: str,
    status: str = "ok",
    loss: float = 0.5,
    throughput: float | None = None,
) -> FrozenTrial:
    """A trial of a study that searches ``PRECISIONS``: ``precision`` is a parameter and an
    attribute."""
    state = TrialState.COMPLETE if status == "ok" else TrialState.PRUNED
    attrs: dict[str, Any] = {
        "status": status,
        "device_signature": SIGNATURE,
        "precision": precision,
        "per_replica_batch_size": batch // 2,
        "num_replicas": 2,
        "learning_rate": 1e-3,
        "lr_rule": "none",
    }
    trial = create_trial(
        state=state,
        values=[loss, throughput or 10.0 * batch] if state == TrialState.COMPLETE else None,
        params={"global_batch_size": batch, "lr_rule": "none", "precision": precision},
        distributions={**DISTRIBUTIONS, "precision": CategoricalDistribution(PRECISIONS)},
        user_attrs=attrs,
    )
    trial.number = number
    return trial


def mixed_study() -> list[FrozenTrial]:
    """float32 fits 64 and 128 and runs out of memory at 256 (512 implied); bf16 fits all
    four, faster, and at 256 fastest of all."""
    return [
        at(0, 64, "float32"),
        at(1, 64, "mixed_bfloat16", throughput=900.0),
        at(2, 128, "float32"),
        at(3, 128, "mixed_bfloat16", throughput=1800.0),
        at(4, 256, "float32", status="oom"),
        at(5, 256, "mixed_bfloat16", throughput=3600.0),
        at(6, 512, "float32", status="oom-implied"),
        at(7, 512, "mixed_bfloat16", loss=0.9),  # outside the loss tolerance
    ]


def test_the_grid_point_and_the_configuration_name_the_precision() -> None:
    trials = mixed_study()
    assert grid_point(trials[1]) == (64, "none", "mixed_bfloat16")
    assert run_key(trials[0]) != run_key(trials[1])
    assert len(unique_trials(trials)) == 8  # one configuration per batch × precision
    assert (256, "none", "float32") in settled_grid_points(trials)
    grid = [(b, "none", p) for b in (64, 128, 256, 512) for p in PRECISIONS]
    assert not GridProgress(grid).has_unclaimed_work(trials)
    assert GridProgress(grid).has_unclaimed_work(trials[:-1])  # bf16 at 512 is left
    # A study of one precision keeps its two parameters and its old grid points.
    plain = make_trial(0, 64, "sqrt", loss=0.5, throughput=1.0)
    assert grid_point(plain) == (64, "sqrt") and precision_of(plain) == "float32"
    assert settled_grid_points([plain]) == {(64, "sqrt")}
    one = make_trial(1, 64, loss=0.5, throughput=1.0, precision="mixed_float16")
    assert precision_of(one) == "mixed_float16"  # a study of one precision: the attribute


def test_out_of_memory_implies_nothing_at_another_precision() -> None:
    trials = mixed_study()
    assert smallest_oom_batch(trials, SIGNATURE, "{}", "float32") == 256
    assert smallest_oom_batch(trials, SIGNATURE, "{}", "mixed_bfloat16") is None
    assert infeasible_batch_sizes(trials, "float32") == [256, 512]
    assert infeasible_batch_sizes(trials, "mixed_bfloat16") == []
    largest, oom = feasibility_by_precision(trials)
    assert largest == {"float32": 128, "mixed_bfloat16": 512}
    assert oom == {"float32": [256, 512], "mixed_bfloat16": []}


def test_two_trainings_at_different_precisions_are_different() -> None:
    common: dict[str, Any] = {
        "global_batch_size": 64,
        "lr_rule": "none",
        "base_lr": 1e-3,
        "base_batch_size": 64,
        "seed": 0,
        "loop": "fit",
        "device_signature": SIGNATURE,
        "budget": {"epochs": 2},
    }
    fp32 = training_key(**common)
    assert training_key(**common, precision="float32") == fp32  # keys stored before precisions
    assert "precision" not in fp32
    bf16 = training_key(**common, precision="mixed_bfloat16")
    assert bf16 != fp32 != training_key(**common, precision="mixed_float16") != bf16


def test_the_recommendation_compares_precisions_and_names_its_own() -> None:
    rec = run_recommend(mixed_study())
    assert rec["trial_number"] == 5 and rec["precision"] == "mixed_bfloat16"
    # The flat keys are the chosen precision's; the maps hold every precision's.
    assert rec["largest_feasible_batch_size"] == 512 and rec["oom_batch_sizes"] == []
    assert rec["largest_feasible_batch_size_by_precision"] == {
        "float32": 128,
        "mixed_bfloat16": 512,
    }
    assert rec["oom_batch_sizes_by_precision"]["float32"] == [256, 512]
    assert rec["per_device_signature"][SIGNATURE]["precision"] == "mixed_bfloat16"
    assert "note" not in rec  # float32's out-of-memory is no limit of the bf16 pick
    rows = dict(recommendation_rows(rec))
    assert rows["precision"].startswith("mixed_bfloat16 (keras.mixed_precision.set_global_policy")
    assert rows["largest feasible batch"] == "512 at mixed_bfloat16; 128 at float32"
    assert rows["out-of-memory sizes"] == "none at mixed_bfloat16; 256, 512 at float32"


def test_a_float32_pick_keeps_its_own_out_of_memory_note() -> None:
    trials = [t for t in mixed_study() if t.number != 5]  # no fast bf16 256
    trials[3] = at(3, 128, "mixed_bfloat16", throughput=100.0)
    trials[1] = at(1, 64, "mixed_bfloat16", throughput=100.0)
    rec = run_recommend(trials)
    assert rec["precision"] == "float32" and rec["global_batch_size"] == 128
    assert rec["oom_batch_sizes"] == [256, 512] and rec["largest_feasible_batch_size"] == 128
    assert "global batch 256 and larger ran out of memory" in rec["note"]


def test_the_json_carries_the_precision_in_its_compile_section() -> None:
    trials = mixed_study()
    rec = run_recommend(trials)
    doc = export_document(rec, trials[5], {}, None)
    assert doc["precision"] == "mixed_bfloat16"
    assert doc["compile"] == {"dtype_policy": "mixed_bfloat16", "loss_scale_optimizer": False}
    fp16 = {**rec, "precision": "mixed_float16"}
    assert export_document(fp16, trials[5], {}, None)["compile"]["loss_scale_optimizer"] is True
    old = {key: value for key, value in rec.items() if key != "precision"}  # an older tuner's
    assert export_document(old, trials[5], {}, None)["compile"]["dtype_policy"] == "float32"


def test_the_table_shows_a_precision_column_only_when_precisions_differ() -> None:
    headers = [header for header, _ in TRIAL_COLUMNS]
    rows = trial_rows(mixed_study())
    column = headers.index("precision")
    assert [row[column] for row in rows[:2]] == PRECISIONS
    assert "precision" in [headers[i] for i in trial_layout(rows, 500).columns]
    one = trial_rows([make_trial(n, b, loss=0.5, throughput=1.0) for n, b in enumerate(BATCHES)])
    assert "precision" not in [headers[i] for i in trial_layout(one, 500).columns]
