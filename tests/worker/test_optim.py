"""The optimizer a trial trains with: the linear warm-up schedule and the rules, in Keras."""

from __future__ import annotations

import json

import keras
import pytest
from child_requests import rule

from tuner.core.errors import WorkloadError
from tuner.core.optimizers import warmup_schedule
from tuner.worker.optim import apply_rule, describe


def ramp(step: int, warmup_steps: int, start: float, peak: float) -> float:
    """Goyal et al.'s warm-up, written out: linear from ``start`` to ``peak``, then ``peak``."""
    return start + (peak - start) * min(step / warmup_steps, 1.0)


@pytest.mark.parametrize("step", [0, 1, 5, 9, 10, 11, 99, 10_000])
def test_the_warmup_schedule_ramps_linearly_then_holds(step: int) -> None:
    schedule = keras.optimizers.schedules.deserialize(warmup_schedule(1.0, 3.0, 10))
    assert float(schedule(step)) == pytest.approx(ramp(step, 10, 1.0, 3.0), rel=1e-6)


def test_the_warmup_schedule_survives_its_config() -> None:
    schedule = keras.optimizers.schedules.deserialize(warmup_schedule(1e-3, 4e-3, 8))
    again = type(schedule).from_config(json.loads(json.dumps(schedule.get_config())))
    assert float(again(4)) == pytest.approx(2.5e-3, rel=1e-6)
    assert float(again(8)) == float(again(80)) == pytest.approx(4e-3, rel=1e-7)


def test_linear_warmup_keeps_the_optimizer_and_ramps_its_rate() -> None:
    warmup = rule("linear-warmup", base_lr=1e-3, learning_rate=4e-3, warmup_steps=8)
    optimizer = apply_rule(keras.optimizers.SGD(learning_rate=4e-3, momentum=0.7), warmup)
    assert type(optimizer).__name__ == "SGD" and optimizer.get_config()["momentum"] == 0.7
    rates = []
    for step in (0, 4, 8, 20):
        optimizer.iterations.assign(step)
        rates.append(float(optimizer.learning_rate))
    assert rates == pytest.approx([ramp(s, 8, 1e-3, 4e-3) for s in (0, 4, 8, 20)], rel=1e-6)
    described = describe(optimizer, False, warmup)
    assert described["warmup"] == {"from": 1e-3, "to": 4e-3, "steps": 8}
    # The whole optimizer, as Keras serializes it, rebuilds the same ramp.
    rebuilt = keras.optimizers.deserialize(json.loads(json.dumps(described["keras"])))
    assert type(rebuilt).__name__ == "SGD" and rebuilt.get_config()["momentum"] == 0.7
    rebuilt.iterations.assign(4)
    assert float(rebuilt.learning_rate) == pytest.approx(ramp(4, 8, 1e-3, 4e-3), rel=1e-6)


def test_sqrt_adam_rewrites_adam_and_refuses_sgd() -> None:
    sqrt = rule("sqrt-adam", ratio=4.0)
    adam = apply_rule(keras.optimizers.Adam(learning_rate=2e-3), sqrt)
    assert adam.get_config()["beta_1"] == pytest.approx(0.6)
    # The stored config holds the rule's exact rate, not the float32 variable read back.
    assert describe(adam, False, sqrt)["keras"]["config"]["learning_rate"] == 2e-3
    with pytest.raises(WorkloadError, match=r"^SGD: "):
        apply_rule(keras.optimizers.SGD(learning_rate=1e-3), sqrt)


def test_other_rules_leave_the_optimizer_alone() -> None:
    optimizer = keras.optimizers.Adam(learning_rate=1e-3)
    assert apply_rule(optimizer, rule("sqrt", ratio=4.0)) is optimizer
    assert apply_rule(optimizer, None) is optimizer


def test_a_config_that_is_not_json_is_left_out_of_the_description() -> None:
    class Odd(keras.optimizers.SGD):
        def get_config(self):  # type: ignore[no-untyped-def]
            return {**super().get_config(), "odd": object()}

    described = describe(Odd(learning_rate=1e-3), True, None)
    assert "keras" not in described and described["class"] == "Odd"
