"""A spec's loss and optimizer in Keras's own serialized form (issue 45, item 6): a TOML table
``{class_name = ..., config = {...}}`` beside the plain name, kept as given, stored and resumed as
given, carried to the child as given; only its form is checked here (Keras, in the workload
check, says whether it knows the class and takes the config)."""

from __future__ import annotations

import copy
import json
import tomllib
from typing import Any

import pytest

from tuner.core.errors import ConfigError
from tuner.core.protocol import decode_request, encode_request
from tuner.core.spec import identity_of, keras_class, spec_from_dict

TOML = """
[study]
name = "logits"

[workload]
model = "m:build"
data = "m:data"
loss = {class_name = "SparseCategoricalCrossentropy", config = {from_logits = true}}
optimizer = {class_name = "Adam", config = {beta_1 = 0.8, learning_rate = 0.5}}

[search]
base_batch_size = 64
batch_multipliers = [1, 2]
lr_rules = ["none", "sqrt-adam"]
base_lr = 1e-3
epochs = 3
"""
LOSS = {"class_name": "SparseCategoricalCrossentropy", "config": {"from_logits": True}}
OPTIMIZER = {"class_name": "Adam", "config": {"beta_1": 0.8, "learning_rate": 0.5}}


def tables() -> dict[str, Any]:
    return tomllib.loads(TOML)


def test_the_serialized_form_is_kept_as_given_beside_the_plain_name() -> None:
    spec = spec_from_dict(tables(), source="s.toml")
    assert spec.workload.loss == LOSS
    assert spec.workload.optimizer == OPTIMIZER  # sqrt-adam takes its class: Adam
    assert (keras_class(spec.workload.loss), keras_class("mse")) == (LOSS["class_name"], "mse")
    plain = tables()
    plain["workload"]["loss"] = "sparse_categorical_crossentropy"
    assert spec_from_dict(plain).workload.loss == "sparse_categorical_crossentropy"


def test_the_stored_spec_rebuilds_it_and_resumes_its_study_but_not_the_plain_names() -> None:
    spec = spec_from_dict(tables(), source="s.toml")
    stored = json.loads(json.dumps(spec.to_dict()))  # as the study keeps it
    assert stored["workload"]["loss"] == LOSS
    rebuilt = {"study": {"name": stored["name"]}}
    for section in ("workload", "search"):
        rebuilt[section] = {k: v for k, v in stored[section].items() if v is not None}
    assert spec_from_dict(rebuilt) == spec
    assert identity_of(stored) == spec.identity()
    plain = tables()
    plain["workload"]["loss"] = "sparse_categorical_crossentropy"
    assert spec_from_dict(plain).identity() != spec.identity()  # from_logits is another study


def test_the_child_is_given_the_serialized_form_across_the_wire() -> None:
    from tuner.driver.children import inspect_request

    request = inspect_request(spec_from_dict(tables(), source="s.toml"))
    assert request.workload.loss == LOSS and request.workload.optimizer == OPTIMIZER
    assert decode_request(encode_request(request)) == request


@pytest.mark.parametrize(
    ("value", "line"),
    [
        (
            {"class_name": "Adam", "settings": {}},
            "has an unknown key 'settings': Keras's serialized form has class_name, config, "
            "module, registered_name (the settings go in config)",
        ),
        ({"config": {"from_logits": True}}, "needs a class_name, as in loss = {class_name = "),
        ({"class_name": ""}, "class_name must be a non-empty string"),
        ({"class_name": "Huber", "config": 1.0}, "config must be a table of the class's settings"),
        (3, "must be a non-empty string, got 3"),
    ],
)
def test_a_bad_form_is_one_line_naming_the_key(value: Any, line: str) -> None:
    data = copy.deepcopy(tables())
    data["workload"]["loss"] = value
    with pytest.raises(ConfigError) as raised:
        spec_from_dict(data, source="s.toml")
    assert line in str(raised.value) and "loss" in str(raised.value)
    assert "\n" not in str(raised.value)


def test_sqrt_adam_refuses_a_serialized_optimizer_of_another_family() -> None:
    data = tables()
    data["workload"]["optimizer"] = {"class_name": "SGD", "config": {"momentum": 0.9}}
    with pytest.raises(ConfigError, match="the optimizer is 'SGD'"):
        spec_from_dict(data, source="s.toml")
