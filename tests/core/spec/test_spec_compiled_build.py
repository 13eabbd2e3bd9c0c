"""The spec's loss and optimizer are optional (issue 28, part 3): a build that compiles its model
gives them, and an uncompiled build without them trains with the documented defaults (mse, adam);
``sqrt-adam`` is checked against a named optimizer here and against the build's in the child."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tuner.core.errors import ConfigError
from tuner.core.spec import spec_from_dict

VALID: dict[str, dict[str, Any]] = {
    "study": {"name": "unit"},
    "workload": {"model": "m:build", "data": "m:data"},
    "search": {
        "base_batch_size": 64,
        "batch_multipliers": [1, 2],
        "lr_rules": ["none", "sqrt-adam"],
        "base_lr": 1e-3,
        "epochs": 3,
    },
}


def build(**search: Any) -> Any:
    data = copy.deepcopy(VALID)
    data["search"].update(search)
    return spec_from_dict(data, source="unit.toml")


def test_a_spec_without_loss_or_optimizer_leaves_them_to_the_build() -> None:
    spec = build()
    assert (spec.workload.loss, spec.workload.optimizer) == (None, None)
    assert spec.to_dict()["workload"]["loss"] is None


def test_unnamed_and_the_default_named_are_one_identity_on_resume() -> None:
    """A study stored before builds' compiles were kept holds loss "mse" and optimizer "adam"
    for a spec that named neither; the same spec read now (None, None) resumes it."""
    named = copy.deepcopy(VALID)
    named["workload"].update(loss="mse", optimizer="adam")
    assert build().identity() == spec_from_dict(named, source="unit.toml").identity()
    named["workload"]["loss"] = "mae"
    assert build().identity() != spec_from_dict(named, source="unit.toml").identity()


def test_sqrt_adam_is_still_checked_against_a_named_optimizer() -> None:
    data = copy.deepcopy(VALID)
    data["workload"]["optimizer"] = "sgd"
    with pytest.raises(ConfigError, match="sqrt-adam rule rescales Adam's moments"):
        spec_from_dict(data, source="unit.toml")
