"""The spec fields of how a trial runs (pure): backend, loop, precisions, and what the JAX
backend refuses — one line naming the field or flag at fault."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tuner.core.errors import ConfigError
from tuner.core.spec import identity_of, spec_from_dict
from tuner.core.spec._runtime import PRECISIONS

RAW: dict[str, dict[str, Any]] = {
    "study": {"name": "unit"},
    "workload": {
        "model": "tuner.workloads.regression:build_model",
        "data": "tuner.workloads.regression:load_data",
    },
    "search": {
        "base_batch_size": 64,
        "batch_multipliers": [1, 2],
        "lr_rules": ["none"],
        "base_lr": 1e-3,
        "epochs": 3,
    },
}


def _spec(workload: dict[str, Any] | None = None, search: dict[str, Any] | None = None) -> Any:
    raw = copy.deepcopy(RAW)
    raw["workload"].update(workload or {})
    raw["search"].update(search or {})
    return spec_from_dict(raw, source="unit.toml")


def test_defaults_are_tensorflow_and_float32() -> None:
    spec = _spec()
    assert spec.workload.backend == "tensorflow"
    assert spec.search.grid.precisions == ("float32",)


def test_jax_and_every_precision_parse() -> None:
    spec = _spec({"backend": "jax"}, {"precisions": list(PRECISIONS)})
    assert spec.workload.backend == "jax"
    assert spec.search.grid.precisions == PRECISIONS
    assert spec.to_dict()["search"]["precisions"] == list(PRECISIONS)


@pytest.mark.parametrize(
    ("workload", "search", "says"),
    [
        ({"backend": "torch"}, {}, "workload.backend in unit.toml must be one of tensorflow, jax"),
        ({}, {"precisions": ["float16"]}, "search.precisions in unit.toml must be one of"),
        ({}, {"precisions": []}, "must be a non-empty list of precisions"),
        ({}, {"precisions": ["float32", "float32"]}, "lists a precision more than once"),
        ({}, {"precisions": ["mixed_float16"], "loop": "custom"}, "needs loop = fit"),
        ({"backend": "jax"}, {"loop": "custom"}, "loop in unit.toml = custom runs on TensorFlow"),
        (
            {"backend": "jax"},
            {"loop": "custom", "update_on": "cpu"},
            "update_on in unit.toml = cpu runs on TensorFlow only",
        ),
    ],
)
def test_what_is_refused_is_one_line(
    workload: dict[str, Any], search: dict[str, Any], says: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        _spec(workload, search)
    message = str(caught.value)
    assert says in message
    assert "\n" not in message


def test_a_dataset_function_is_refused_under_jax() -> None:
    workload = {"backend": "jax", "data": None, "dataset": "tuner_test_workloads:dataset_fn"}
    raw = copy.deepcopy(RAW)
    raw["workload"].update(workload)
    del raw["workload"]["data"]
    with pytest.raises(ConfigError, match="runs on TensorFlow only"):
        spec_from_dict(raw, source="unit.toml")


def test_flags_name_themselves_in_errors() -> None:
    with pytest.raises(ConfigError, match=r"^--backend must be one of"):
        spec_from_dict(None, {"workload.backend": "torch"})
    with pytest.raises(ConfigError, match="--loop = custom runs on TensorFlow only; --backend"):
        spec_from_dict(None, {"workload.backend": "jax", "search.loop": "custom"})


def test_a_study_stored_before_the_fields_keeps_its_identity() -> None:
    """Studies stored before issue 18 had no backend or precisions: they resume as tensorflow /
    float32, and a study on the other backend or with more precisions does not match them."""
    spec = _spec()
    stored = spec.to_dict()
    del stored["workload"]["backend"]
    del stored["search"]["precisions"]
    assert identity_of(stored) == spec.identity()
    assert _spec({"backend": "jax"}).identity() != spec.identity()
    assert _spec(search={"precisions": ["float32", "mixed_bfloat16"]}).identity() != spec.identity()
