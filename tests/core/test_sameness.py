"""Which grid points train alike: the training key (pure, no child)."""

from __future__ import annotations

from typing import Any

import pytest

from tuner.core.sameness import training_key
from tuner.core.scaling import LR_RULES

BUDGET = {"epochs": 2, "train_samples": None, "val_samples": None}


def key(batch: int = 64, rule: str = "none", **changes: Any) -> str:
    args: dict[str, Any] = {
        "global_batch_size": batch,
        "lr_rule": rule,
        "base_lr": 1e-3,
        "base_batch_size": 64,
        "seed": 0,
        "loop": "fit",
        "device_signature": "2x cpu",
        "budget": BUDGET,
        **changes,
    }
    return training_key(**args)


def test_at_ratio_one_every_rule_trains_alike() -> None:
    assert len({key(64, rule) for rule in LR_RULES}) == 1


def test_at_ratio_two_rules_that_change_the_rate_or_optimizer_differ() -> None:
    keys = {rule: key(128, rule) for rule in LR_RULES}
    # linear and linear-warmup reach one rate, but one ramps to it; sqrt-adam also moves betas.
    assert len(set(keys.values())) == len(LR_RULES)
    assert keys["none"] != key(64, "none")


def test_a_warmup_ramp_is_part_of_the_key_only_when_it_climbs() -> None:
    assert key(128, "linear-warmup", warmup_steps=10) != key(128, "linear-warmup", warmup_steps=20)
    assert key(64, "linear-warmup", warmup_steps=10) == key(64, "linear-warmup", warmup_steps=20)
    assert key(64, "linear-warmup", warmup_steps=10) == key(64, "none")


def test_rates_are_compared_robustly_not_bit_for_bit() -> None:
    assert key(base_lr=1e-3) == key(base_lr=1e-3 * (1 + 1e-13))
    assert key(base_lr=1e-3) != key(base_lr=1.0001e-3)


@pytest.mark.parametrize(
    "change",
    [
        {"seed": 1},
        {"loop": "custom"},
        {"device_signature": "1x cpu"},
        {"budget": {**BUDGET, "epochs": 3}},
        {"model_hyperparameters": {"units": 32}},
    ],
)
def test_anything_else_that_changes_the_run_changes_the_key(change: dict[str, Any]) -> None:
    assert key(**change) != key()


def test_the_key_is_stable_text() -> None:
    assert key() == key()
    assert isinstance(key(), str) and '"global_batch_size":64' in key()
