"""The optimizer a trial trains with: the linear warm-up schedule and the rules, in Keras."""

from __future__ import annotations

import keras
import pytest

from tuner.core.errors import WorkloadError
from tuner.worker.optim import LinearWarmup, apply_rule, describe


def ramp(step: int, warmup_steps: int, start: float, peak: float) -> float:
    """Goyal et al.'s warm-up, written out: linear from ``start`` to ``peak``, then ``peak``."""
    return start + (peak - start) * min(step / warmup_steps, 1.0)


@pytest.mark.parametrize("step", [0, 1, 5, 9, 10, 11, 99])
def test_the_warmup_schedule_ramps_linearly_then_holds(step: int) -> None:
    schedule = LinearWarmup(start=1.0, peak=3.0, warmup_steps=10)
    assert float(schedule(step)) == pytest.approx(ramp(step, 10, 1.0, 3.0), rel=1e-6)


def test_the_warmup_schedule_survives_its_config() -> None:
    schedule = LinearWarmup.from_config(LinearWarmup(1e-3, 4e-3, 8).get_config())
    assert float(schedule(4)) == pytest.approx(2.5e-3, rel=1e-6)


def test_linear_warmup_keeps_the_optimizer_and_ramps_its_rate() -> None:
    rule = {"name": "linear-warmup", "base_lr": 1e-3, "learning_rate": 4e-3, "warmup_steps": 8}
    optimizer = apply_rule(keras.optimizers.SGD(learning_rate=4e-3, momentum=0.7), rule)
    assert type(optimizer).__name__ == "SGD" and optimizer.get_config()["momentum"] == 0.7
    rates = []
    for step in (0, 4, 8, 20):
        optimizer.iterations.assign(step)
        rates.append(float(optimizer.learning_rate))
    assert rates == pytest.approx([ramp(s, 8, 1e-3, 4e-3) for s in (0, 4, 8, 20)], rel=1e-6)
    assert describe(optimizer, False, rule)["warmup"] == {"from": 1e-3, "to": 4e-3, "steps": 8}


def test_sqrt_adam_rewrites_adam_and_refuses_sgd() -> None:
    rule = {"name": "sqrt-adam", "ratio": 4.0}
    adam = apply_rule(keras.optimizers.Adam(learning_rate=2e-3), rule)
    assert adam.get_config()["beta_1"] == pytest.approx(0.6)
    with pytest.raises(WorkloadError, match=r"^SGD: "):
        apply_rule(keras.optimizers.SGD(learning_rate=1e-3), rule)


def test_other_rules_leave_the_optimizer_alone() -> None:
    optimizer = keras.optimizers.Adam(learning_rate=1e-3)
    assert apply_rule(optimizer, {"name": "sqrt", "ratio": 4.0}) is optimizer
    assert apply_rule(optimizer, None) is optimizer
