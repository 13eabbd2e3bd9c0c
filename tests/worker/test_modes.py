"""The child's dispatch (one runner per protocol mode) and the pure parts of the training modes,
in this process: nothing here trains."""

from __future__ import annotations

import dataclasses
import importlib
import json
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from child_requests import inspect_request, run_request

from tuner.core.errors import WorkloadError
from tuner.core.protocol import MODES, PROTOCOL_VERSION, LearningRateRule, Result, decode_request
from tuner.worker import session as runs
from tuner.worker.backends.tensorflow import _inputs as inputs
from tuner.worker.modes import Modes
from tuner.worker.probe import run_probe
from tuner.worker.trial import run_trial
from tuner.worker.validate import run_validation, weight_sync

child = importlib.import_module("tuner.worker.__main__")


def test_every_protocol_mode_has_its_runner() -> None:
    modes = child.runners()
    assert tuple(field.name for field in dataclasses.fields(modes)) == MODES
    assert (modes.trial, modes.probe, modes.validate) == (run_trial, run_probe, run_validation)


def test_each_request_goes_to_its_own_modes_runner() -> None:
    seen: list[tuple[str, object]] = []

    def runner(name: str) -> Any:
        return lambda request, emit: seen.append((name, request)) or Result(status="ok")

    modes = Modes(**{name: runner(name) for name in MODES})
    requests = [
        inspect_request(model="m:build", data="m:data"),
        *(run_request(mode, model="m:build", data="m:data") for mode in MODES[1:]),
    ]
    for request in requests:
        modes.answer(request, lambda event: None)
    assert seen == list(zip(MODES, requests, strict=True))


def test_inspect_runs_the_workload_check() -> None:
    request = inspect_request(
        model="tuner.workloads.regression:build_model",
        data="tuner_test_workloads:small_regression_data",
    )
    events: list[object] = []
    result = child.runners().inspect(request, events.append)
    assert (result.status, result.payload["n_train"]) == ("ok", 4096)
    assert events == []


@pytest.mark.parametrize("mode", ["train", None])
def test_an_unknown_mode_is_refused_by_name(mode: str | None) -> None:
    text = json.dumps({"protocol_version": PROTOCOL_VERSION, "mode": mode})
    with pytest.raises(ValueError, match=f"unknown mode {mode!r}; known: inspect, trial, probe"):
        decode_request(text)


def test_weight_sync_reports_the_largest_difference_between_copies() -> None:
    a = np.zeros((2, 3), dtype="float32")
    b = a.copy()
    b[1, 2] = -0.25
    found = weight_sync([[a, a], [np.ones(4), np.ones(4) + 0.125], [a, b]])
    assert found == {
        "variables_compared": 3,
        "copies_per_variable": 2,
        "weight_max_abs_diff": 0.25,
    }
    assert weight_sync([[a], [b]])["weight_max_abs_diff"] == 0.0  # one copy: nothing to compare


def _source(size: int | None) -> inputs.Source:
    return inputs.Source("arrays", "pkg.mod:data", train_size=size)


def test_windows_are_epochs_a_sample_budget_or_the_requested_steps() -> None:
    def windows(budget: dict[str, int], batch: int, source: inputs.Source) -> tuple[int, int]:
        return runs._windows(run_request(**{"epochs": None, **budget}), batch, source)

    assert windows({"epochs": 3}, 256, _source(4096)) == (16, 3)
    assert windows({"epochs": 1, "steps_per_epoch": 5}, 256, _source(4096)) == (5, 1)
    assert windows({"epochs": 1, "steps_per_epoch": 50}, 256, _source(4096)) == (16, 1)
    assert windows({"epochs": 1, "steps_per_epoch": 5}, 256, _source(None)) == (5, 1)
    # 16,384 samples at 256: 64 steps in 8 windows of 8 (one warm-up, seven timed).
    assert windows({"train_samples": 16_384}, 256, _source(None)) == (8, 8)
    with pytest.raises(WorkloadError, match=r"^global batch 8192 is larger than the training set"):
        windows({"epochs": 2}, 8192, _source(4096))
    with pytest.raises(WorkloadError, match="no known size, so epochs cannot be counted"):
        windows({"epochs": 2}, 256, _source(None))
    with pytest.raises(WorkloadError, match=r"make 4 steps.*raise train_samples"):
        windows({"train_samples": 1024}, 256, _source(None))


def test_a_warmup_in_epochs_becomes_steps() -> None:
    rule = LearningRateRule(
        name="linear-warmup",
        ratio=2.0,
        base_lr=1e-3,
        learning_rate=2e-3,
        warmup_steps=None,
        warmup_epochs=0.5,
        sample_budget=False,
    )

    def steps(rule: LearningRateRule, epoch_steps: int, total_steps: int) -> int | None:
        resolved = runs._resolved_rule(rule, epoch_steps, total_steps)
        assert resolved is not None
        return resolved.warmup_steps

    assert steps(rule, 16, 48) == 8
    assert steps(replace(rule, warmup_epochs=0.01), 16, 48) == 1
    assert steps(replace(rule, warmup_steps=3), 16, 48) == 3
    budget = replace(rule, sample_budget=True)  # no epochs: the first 10 % of the steps
    assert steps(budget, 16, 480) == 48
    sqrt = replace(rule, name="sqrt-adam")
    assert runs._resolved_rule(sqrt, 16, 48) is sqrt
