"""Measuring the input pipeline once per (pipeline, batch, devices): the input key, the lookup,
and a search with a fake child and a real SQLite study — the second trial at a batch is sent
the first one's figure and stores where it came from; another batch measures its own.
(The real search, with real children: tests/e2e/test_input_reuse_real.py.)"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import optuna
import pytest
from fake_child import PLAN, FakeChild, make_spec, ok

from tuner.core.devices import DevicePlan
from tuner.core.outcome import TrialOutcome
from tuner.core.protocol import TrialRequest, decode_request, encode_request
from tuner.core.record import decode
from tuner.driver import study as study_module
from tuner.driver.children import trial_request
from tuner.driver.reuse.input_reuse import INPUT_KEY, REUSED_FROM, InputReuse, find_input, input_key
from tuner.driver.study import run_search

ATTRS = {"workload": {"n_train": 4096, "digest": "abc"}, "versions": {"keras": "3"}}


def request(batch: int = 128, rule: str = "linear", **changes: Any) -> TrialRequest:
    spec = make_spec((1, 2, 4))
    made = trial_request(spec, PLAN, batch, 1e-3 * batch / 64, rule=rule)
    return replace(made, **changes)


def test_the_key_ignores_what_the_pipeline_does_not_depend_on() -> None:
    key = input_key(request(), ATTRS)
    assert input_key(request(rule="sqrt", learning_rate=0.5), ATTRS) == key
    assert input_key(request(seed=7), ATTRS) == key
    assert input_key(request(model_hyperparameters={"units": 32}), ATTRS) == key
    assert input_key(request(noise_scale=False, input_throughput=1.0), ATTRS) == key


@pytest.mark.parametrize(
    "changed",
    [
        {"global_batch_size": 256},
        {"plan": DevicePlan(kind="cpu", num_replicas=1)},
        {"precision": "mixed_bfloat16"},
        {"loop": "custom"},
        {"budget": replace(request().budget, train_samples=1024, epochs=None)},
    ],
    ids=lambda c: next(iter(c)),
)
def test_the_key_changes_with_the_batch_devices_budget_and_pipeline(changed: dict) -> None:
    assert input_key(request(**changed), ATTRS) != input_key(request(), ATTRS)


def test_the_key_changes_with_the_data_versions_and_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = input_key(request(), ATTRS)
    other_data = replace(request().workload, data="my_data:load_data")
    assert input_key(request(workload=other_data), ATTRS) != key
    assert input_key(request(), {**ATTRS, "workload": {"n_train": 4096, "digest": "x"}}) != key
    assert input_key(request(), {**ATTRS, "versions": {"keras": "4"}}) != key
    monkeypatch.setenv("TF_NUM_INTRAOP_THREADS", "1")
    assert input_key(request(), ATTRS) != key


def frozen(number: int, **attrs: Any) -> optuna.trial.FrozenTrial:
    trial = optuna.trial.create_trial(state=optuna.trial.TrialState.COMPLETE, values=[1.0, 2.0])
    trial.number = number
    trial.set_user_attr("global_batch_size", 128)
    for name, value in attrs.items():
        trial.set_user_attr(name, value)
    return trial


def test_the_lookup_takes_the_earliest_trial_that_measured_it_itself() -> None:
    trials = [
        frozen(3, input_key="k", input_throughput=900.0),
        frozen(2, input_key="k", input_throughput=800.0, input_throughput_from=0),
        frozen(1, input_key="other", input_throughput=700.0),
        frozen(0, input_key="k"),  # failed before measuring
    ]
    assert find_input(trials, "k") == (900.0, 3)
    assert find_input(trials, "missing") is None


def test_the_outcome_records_its_key_and_where_its_figure_came_from() -> None:
    measured = TrialOutcome("ok", attrs={"input_throughput": 5.0})
    assert InputReuse.record(measured, "k", None).attrs == {"input_throughput": 5.0, INPUT_KEY: "k"}
    assert InputReuse.record(measured, "k", 4).attrs[REUSED_FROM] == 4
    failed = TrialOutcome("crashed")
    assert InputReuse.record(failed, "k", 4).attrs == {}


def test_the_figure_travels_in_the_request() -> None:
    sent = request(input_throughput=1234.5)
    assert decode_request(encode_request(sent)) == sent


def test_a_search_measures_each_batchs_pipeline_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(study_module, "refresh", lambda study, warn=None: None)

    def answer(req: TrialRequest) -> dict[str, Any]:
        batch = req.global_batch_size
        # The child reports what it was sent, else its own measurement (10 per sample).
        alone = req.input_throughput or 10.0 * batch
        return ok(batch, input_throughput=alone, input_bound=False)

    child = FakeChild(answer)
    spec = make_spec((1, 2, 4))
    report = run_search(spec, PLAN, f"sqlite:///{tmp_path / 's.db'}", runner=child)
    trials = sorted(report.study.get_trials(), key=lambda t: t.number)
    sent = {}
    for req in child.requests:
        if isinstance(req, TrialRequest) and req.plan == PLAN:  # not the baseline's device
            sent.setdefault(req.global_batch_size, []).append(req.input_throughput)
    # Batch 64: both rules train alike (one child); 128 and 256: the second is sent the first's.
    assert sent == {64: [None], 128: [None, 1280.0], 256: [None, 2560.0]}
    by_batch: dict[int, list[optuna.trial.FrozenTrial]] = {}
    for trial in trials:
        by_batch.setdefault(decode(trial).configuration.global_batch_size, []).append(trial)
    for batch in (128, 256):
        first, second = by_batch[batch]
        assert decode(first).reuse.input_throughput_from is None
        assert decode(second).reuse.input_throughput_from == first.number
        assert decode(second).reuse.input_key == decode(first).reuse.input_key
        assert decode(second).result.input_throughput == decode(first).result.input_throughput
    assert decode(by_batch[128][0]).reuse.input_key != decode(by_batch[256][0]).reuse.input_key


@pytest.mark.parametrize("multipliers", [(1, 2), (2, 4)], ids=["grid-first", "seeds-first"])
def test_seed_runs_reuse_the_base_configurations_figure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, multipliers: tuple[int, ...]
) -> None:
    """The seed runs train the base configuration: after the grid's base trial they are sent its
    figure; when they come first (no multiplier 1), the first seed run times it for the next."""
    monkeypatch.setattr(study_module, "refresh", lambda study, warn=None: None)
    child = FakeChild(
        lambda req: ok(
            req.global_batch_size,
            input_throughput=req.input_throughput or 10.0 * req.global_batch_size,
        )
    )
    spec = make_spec(multipliers, seeds=3)
    report = run_search(spec, PLAN, f"sqlite:///{tmp_path / 's.db'}", runner=child)
    assert "seed_noise" in report.study.user_attrs
    base = [
        r.input_throughput
        for r in child.requests
        if isinstance(r, TrialRequest) and r.plan == PLAN and r.global_batch_size == 64
    ]
    # grid-first: the grid's base trial times it, then two seed runs are sent its figure;
    # seeds-first: three seed runs of 64 before the grid of 128 and 256, the first times it.
    assert base == [None, 640.0, 640.0]
