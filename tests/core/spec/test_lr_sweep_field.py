"""``[search] lr_sweep`` / ``--lr-sweep`` (issue 32): 0 or at least 3 rates; the sweep's rules
join the grid's rule axis after the fixed ones; a study stored before the field resumes as one
without a sweep, and a sweep added is another study."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tuner.core.errors import ConfigError
from tuner.core.spec import identity_of, spec_from_dict
from tuner.driver.trial.grid import grid_points

VALID: dict[str, dict[str, Any]] = {
    "study": {"name": "unit"},
    "workload": {"model": "m:build", "data": "m:load", "loss": "mse", "optimizer": "sgd"},
    "search": {
        "base_batch_size": 8,
        "batch_multipliers": [1, 4],
        "lr_rules": ["none"],
        "base_lr": 0.1,
        "train_samples": 1024,
    },
}


def spec(**search: Any):
    data = copy.deepcopy(VALID)
    data["search"].update(search)
    return spec_from_dict(data, source="unit.toml")


def test_the_sweep_adds_its_rules_to_the_grid() -> None:
    assert spec().search.sweep.rates == 0 and spec().search.grid_rules == ("none",)
    swept = spec(lr_sweep=3)
    assert swept.search.grid_rules == ("none", "sweep-1/3", "sweep-2/3", "sweep-3/3")
    assert len(grid_points(swept)) == 2 * 4
    flag = spec_from_dict(copy.deepcopy(VALID), {"search.lr_sweep": 5}, source="unit.toml")
    assert flag.search.sweep.rates == 5


@pytest.mark.parametrize("value", [1, 2, -1, "5", True, 2.5])
def test_a_sweep_too_small_to_fit_is_one_line(value: Any) -> None:
    with pytest.raises(ConfigError, match=r"search\.lr_sweep in unit\.toml must be 0"):
        spec(lr_sweep=value)
    with pytest.raises(ConfigError, match="--lr-sweep must be 0"):
        spec_from_dict(copy.deepcopy(VALID), {"search.lr_sweep": value}, source="unit.toml")


def test_a_study_stored_before_the_field_resumes_without_a_sweep() -> None:
    stored = spec().to_dict()
    del stored["search"]["lr_sweep"]
    assert identity_of(stored) == spec().identity()
    assert spec(lr_sweep=5).identity() != spec().identity()
