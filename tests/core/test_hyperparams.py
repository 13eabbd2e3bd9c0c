"""Unit tests of the KerasTuner -> Optuna mapping (pure, no TensorFlow)."""

from __future__ import annotations

import optuna
import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from tuner.core.errors import WorkloadError
from tuner.core.hyperparams import (
    check,
    config_key,
    defaults,
    distribution,
    is_active,
    snippet,
    suggest,
)


def entry(kind: str, name: str, conditions: list | None = None, **config) -> dict:
    return {"class_name": kind, "config": {"name": name, "conditions": conditions or [], **config}}


def parent(name: str, values: list) -> dict:
    return {"class_name": "Parent", "config": {"name": name, "values": values}}


SPACE = [
    entry("Int", "units", min_value=16, max_value=50, step=16, sampling="linear", default=None),
    entry("Choice", "activation", values=["relu", "tanh"], ordered=False, default="relu"),
    entry("Float", "l2", min_value=1e-6, max_value=1e-3, step=None, sampling="log", default=1e-6),
    entry("Boolean", "dropout", default=False),
    entry(
        "Float",
        "rate",
        [parent("dropout", [True])],
        min_value=0.1,
        max_value=0.3,
        step=0.1,
        sampling="linear",
        default=0.1,
    ),
    entry("Fixed", "layers", value=2),
]


def test_each_kind_maps_to_its_optuna_distribution_keeping_ranges():
    units, activation, l2, dropout, rate, layers = (distribution(e) for e in SPACE)
    assert units == IntDistribution(16, 48, step=16)  # 50 is not reachable in steps of 16
    assert activation == CategoricalDistribution(["relu", "tanh"])
    assert l2 == FloatDistribution(1e-6, 1e-3, log=True)
    assert dropout == CategoricalDistribution([False, True])
    assert rate == FloatDistribution(0.1, 0.3, step=0.1)
    assert layers == CategoricalDistribution([2])
    assert distribution(
        entry("Int", "n", min_value=1, max_value=64, step=None, sampling="log")
    ) == IntDistribution(1, 64, log=True)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (entry("Float", "x", min_value=1, max_value=2, sampling="reverse_log"), "reverse_log"),
        (entry("Int", "n", min_value=1, max_value=64, step=2, sampling="log"), "step 1"),
        (entry("Unknown", "z"), "cannot map"),
    ],
)
def test_what_optuna_cannot_sample_is_refused_by_name(bad, message):
    with pytest.raises(WorkloadError, match=message):
        check([*SPACE, bad])


def test_defaults_leave_inactive_conditionals_out():
    assert defaults(SPACE) == {
        "units": 16,
        "activation": "relu",
        "l2": 1e-6,
        "dropout": False,
        "layers": 2,
    }
    assert not is_active(SPACE[4], {"dropout": False})
    assert is_active(SPACE[4], {"dropout": True})


def test_suggest_on_a_real_study_respects_conditions_and_keeps_names():
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    seen_rate = {True: 0, False: 0}
    for _ in range(30):
        trial = study.ask()
        values = suggest(trial, {"space": SPACE})
        assert set(trial.params) == set(values)
        assert ("rate" in values) == values["dropout"]
        seen_rate[values["dropout"]] += 1
        assert values["units"] in (16, 32, 48) and 1e-6 <= values["l2"] <= 1e-3
        study.tell(trial, 0.0)
    assert seen_rate[True] and seen_rate[False]


def test_snippet_rebuilds_with_fixed_values_for_each_kind():
    values = {"units": 32, "activation": "tanh"}
    text = snippet("pkg.models:build", "function", values)
    assert "from pkg.models import build" in text
    assert "hp.Fixed('units', 32)\nhp.Fixed('activation', 'tanh')" in text
    assert text.endswith("model = build(hp)\n")
    assert snippet("m:Hyper", "class", values).endswith("model = Hyper().build(hp)\n")
    assert snippet("m:obj", "instance", values).endswith("model = obj.build(hp)\n")


def test_config_key_is_order_independent():
    assert config_key({"a": 1, "b": "x"}) == config_key({"b": "x", "a": 1})
    assert config_key({"a": 1}) != config_key({"a": 2})
