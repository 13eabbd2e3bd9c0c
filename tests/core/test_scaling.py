"""Unit tests of the learning-rate scaling rules (pure, no TensorFlow)."""

from __future__ import annotations

import pytest

from tuner.core.scaling import LR_RULES, batch_ratio, scaled_learning_rate
from tuner.core.spec import spec_from_dict

BASE_LR = 1e-3
BASE_BATCH = 64

# (global batch, expected k)
RATIOS = [(64, 1.0), (128, 2.0), (256, 4.0), (576, 9.0), (32, 0.5), (96, 1.5)]


@pytest.mark.parametrize("rule", LR_RULES)
def test_every_known_rule_is_a_rate_of_the_batch_ratio_alone(rule: str) -> None:
    """What a study relies on for any rule a spec may name: the base rate at the base batch, a
    rate that never falls as the batch grows, proportional to the base rate, set by the ratio
    alone (256 of 64 as 1024 of 256), and between keeping the rate and scaling it linearly."""
    ks = [0.25, 0.5, 1.0, 2.0, 4.0, 16.0]
    rates = [scaled_learning_rate(rule, BASE_LR, round(BASE_BATCH * k), BASE_BATCH) for k in ks]
    assert rates[ks.index(1.0)] == pytest.approx(BASE_LR)
    assert rates == sorted(rates)
    for k, rate in zip(ks, rates, strict=True):
        low, high = sorted((BASE_LR, BASE_LR * k))
        assert low * (1 - 1e-12) <= rate <= high * (1 + 1e-12), (k, rate)
    at_4x = scaled_learning_rate(rule, BASE_LR, 256, 64)
    assert scaled_learning_rate(rule, 3 * BASE_LR, 256, 64) == pytest.approx(3 * at_4x)
    assert scaled_learning_rate(rule, BASE_LR, 1024, 256) == pytest.approx(at_4x)
    spec = spec_from_dict(overrides={"search.lr_rules": [rule]})  # and a spec may name it
    assert spec.search.grid.lr_rules == (rule,)


# The exponent p of each documented rule's k ** p (its peak rate, for the warmup rule), from the
# papers the module cites.
EXPONENTS = {"none": 0.0, "linear": 1.0, "sqrt": 0.5, "linear-warmup": 1.0, "sqrt-adam": 0.5}


@pytest.mark.parametrize(("rule", "p"), EXPONENTS.items())
@pytest.mark.parametrize(("global_batch", "k"), RATIOS)
def test_each_documented_rule_scales_as_its_power_of_k(
    rule: str, p: float, global_batch: int, k: float
) -> None:
    assert scaled_learning_rate(rule, BASE_LR, global_batch, BASE_BATCH) == pytest.approx(
        BASE_LR * k**p
    )


@pytest.mark.parametrize(("global_batch", "k"), RATIOS)
def test_batch_ratio(global_batch: int, k: float) -> None:
    assert batch_ratio(global_batch, BASE_BATCH) == pytest.approx(k)


def test_concrete_values() -> None:
    # k = 4: none -> 0.1, linear -> 0.4, sqrt -> 0.2
    assert scaled_learning_rate("none", 0.1, 256, 64) == pytest.approx(0.1)
    assert scaled_learning_rate("linear", 0.1, 256, 64) == pytest.approx(0.4)
    assert scaled_learning_rate("sqrt", 0.1, 256, 64) == pytest.approx(0.2)


def test_rules_agree_at_base_batch() -> None:
    values = {rule: scaled_learning_rate(rule, 3e-4, 128, 128) for rule in LR_RULES}
    assert all(v == pytest.approx(3e-4) for v in values.values())


def test_rules_are_ordered_above_base_batch() -> None:
    rate = {rule: scaled_learning_rate(rule, 1e-3, 512, 64) for rule in LR_RULES}
    assert rate["none"] < rate["sqrt"] < rate["linear"]
    assert rate["linear-warmup"] == rate["linear"] and rate["sqrt-adam"] == rate["sqrt"]  # peaks


@pytest.mark.parametrize("rule", ["cubic", "Linear", "", "SQRT", " none"])
def test_unknown_rule_raises(rule: str) -> None:
    with pytest.raises(ValueError, match="unknown learning-rate rule") as info:
        scaled_learning_rate(rule, BASE_LR, 128, BASE_BATCH)
    message = str(info.value)
    assert repr(rule) in message
    assert "none, linear, sqrt" in message


@pytest.mark.parametrize(("global_batch", "base_batch"), [(0, 64), (-64, 64), (64, 0), (64, -1)])
def test_batch_ratio_rejects_non_positive(global_batch: int, base_batch: int) -> None:
    with pytest.raises(ValueError, match="positive"):
        batch_ratio(global_batch, base_batch)


def test_scaled_learning_rate_rejects_non_positive_batch() -> None:
    with pytest.raises(ValueError, match="positive"):
        scaled_learning_rate("linear", BASE_LR, 0, BASE_BATCH)
    with pytest.raises(ValueError, match="positive"):
        scaled_learning_rate("none", BASE_LR, 64, -64)


def test_sqrt_adam_rescales_the_moments_as_malladi_et_al() -> None:
    from tuner.core.scaling import optimizer_settings

    settings = optimizer_settings(
        "sqrt-adam", 4.0, {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-8}
    )
    assert settings["beta_1"] == pytest.approx(0.6)
    assert settings["beta_2"] == pytest.approx(0.996)
    assert settings["epsilon"] == pytest.approx(5e-9)
    assert optimizer_settings("linear", 4.0, {}) == {}


def test_sqrt_adam_refuses_what_it_cannot_apply_to() -> None:
    from tuner.core.scaling import optimizer_settings

    with pytest.raises(ValueError, match="no beta_1, beta_2, epsilon"):
        optimizer_settings("sqrt-adam", 2.0, {"momentum": 0.9})
    with pytest.raises(ValueError, match=r"beta_1 = -0\.6"):
        optimizer_settings("sqrt-adam", 16.0, {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7})
