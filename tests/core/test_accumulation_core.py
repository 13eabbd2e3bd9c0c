"""Gradient accumulation, pure: how many micro-steps a batch needs, what is known not to fit in
one step, the recommendation's ``accumulation`` block and line, the export's batch for ``fit``,
and the spec field."""

from __future__ import annotations

from typing import Any

import pytest
from trials import SIGNATURE, make_trial, run_recommend

from tuner.core.accumulation import (
    accumulation_fields,
    cost_text,
    first_steps,
    next_steps,
    smallest_unfit,
)
from tuner.core.errors import ConfigError
from tuner.core.recommend._export import fit_section, recommended_section, trial_budget
from tuner.core.spec import spec_from_dict
from tuner.views.recommendation import answer_text, feasible_text, recommendation_rows


def test_first_steps_bring_the_micro_batch_below_what_did_not_fit() -> None:
    assert first_steps(256, 2, None) == 1  # nothing known: one step first
    assert first_steps(256, 2, 512) == 1
    assert first_steps(256, 2, 256) == 2  # 128 < 256
    assert first_steps(512, 2, 256) == 4  # 512 / 4 = 128 < 256
    assert first_steps(6, 2, 6) is None  # 6 / 2 = 3 does not split over 2 replicas
    assert first_steps(4, 2, 1) is None  # a replica would get no example


def test_next_steps_double_until_a_replica_would_get_nothing() -> None:
    assert next_steps(512, 2, 2) == 4
    assert next_steps(8, 2, 4) is None


def test_a_batch_that_accumulated_did_not_fit_in_one_step() -> None:
    trials = [
        make_trial(0, 128, loss=0.5, throughput=1.0),
        make_trial(1, 256, loss=0.5, throughput=1.0, accumulation_steps=2),
        make_trial(2, 512, status="oom"),
    ]
    assert smallest_unfit(trials, SIGNATURE, "{}", "float32") == 256
    assert smallest_unfit(trials[:1], SIGNATURE, "{}", "float32") is None
    assert smallest_unfit(trials, "other", "{}", "float32") is None


def test_the_recommendation_says_a_batch_was_reached_only_by_accumulation() -> None:
    fits = make_trial(0, 128, loss=0.5, throughput=1000.0, accumulation_steps=1)
    accumulated = make_trial(
        1,
        256,
        loss=0.5,
        throughput=800.0,
        accumulation_steps=2,
        micro_batch_per_replica=64,
        accumulation_reason="global batch 256 does not fit in one step",
    )
    block = accumulation_fields(accumulated, [fits, accumulated])["accumulation"]
    assert block["steps"] == 2 and block["largest_fitting_batch_size"] == 128
    assert block["throughput_ratio"] == pytest.approx(0.8)
    assert accumulation_fields(fits, [fits, accumulated]) == {}

    rec = run_recommend([fits, accumulated], tie_margin=0.0)
    rec = {**rec, **accumulation_fields(accumulated, [fits, accumulated])}
    rec.update(global_batch_size=256, per_replica_batch_size=128, throughput=800.0)
    line = cost_text(rec)
    assert line.startswith("batch 256 is reached only by accumulation: 2 micro-steps of 64")
    assert "0.80× the throughput of batch 128, the largest that fit in one step" in line
    assert ("accumulation", line) in recommendation_rows(rec)
    assert "by accumulation (fit's batch_size 128)" in answer_text(rec)
    assert "gradient_accumulation_steps=2" in answer_text(rec)
    assert fit_section(rec) == {"batch_size": 128}
    # The budget's steps are batches fit fed: micro-batches of 128.
    budget = trial_budget(rec, {"train_samples_used": 1024}, {"train_samples": 1024})
    assert budget == {"train_samples": 1024, "steps": 8}
    assert recommended_section(rec, {})["accumulation_steps"] == 2
    assert cost_text({**rec, "accumulation": None}) == ""


def test_the_spec_field_is_a_boolean() -> None:
    raw: dict[str, Any] = {
        "study": {"name": "acc"},
        "workload": {"model": "m:build", "data": "m:load"},
        "search": {
            "base_batch_size": 64,
            "batch_multipliers": [1, 2],
            "lr_rules": ["none"],
            "base_lr": 1e-3,
            "epochs": 2,
        },
    }
    assert spec_from_dict(raw).search.run.accumulation is False
    raw["search"]["accumulation"] = True
    assert spec_from_dict(raw).search.run.accumulation is True
    raw["search"]["accumulation"] = "yes"
    with pytest.raises(ConfigError, match="accumulation in the spec must be true or false"):
        spec_from_dict(raw)


def test_a_batch_reached_only_by_accumulation_is_not_the_largest_that_fits() -> None:
    fits = make_trial(0, 128, loss=0.5, throughput=1000.0, accumulation_steps=1)
    accumulated = make_trial(1, 256, loss=0.5, throughput=800.0, accumulation_steps=2)
    rec = run_recommend([fits, accumulated], tie_margin=0.0)
    assert rec["largest_feasible_batch_size"] == 128  # 256 did not fit in one step
    assert rec["largest_feasible_batch_size_by_precision"] == {"float32": 128}
    alone = run_recommend([accumulated], tie_margin=0.0)
    assert alone["largest_feasible_batch_size"] is None  # nothing fit in one step
    assert feasible_text(alone) == "none in one step"
