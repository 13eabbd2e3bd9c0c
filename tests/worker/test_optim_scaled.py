"""A mixed_float16 trial's optimizer is Keras's LossScaleOptimizer around the user's: what the
trial records (and the export copies) is the inner optimizer, so that loading the recommendation
rebuilds it and wraps it again, rather than failing on a learning rate the wrapper refuses."""

from __future__ import annotations

import keras
import pytest
from child_requests import rule

from tuner.load import optimizer_from
from tuner.worker import optim, precision

RULE = rule("linear", learning_rate=0.002, base_lr=0.001, ratio=2.0)


def test_the_scaled_optimizer_is_described_by_the_one_inside() -> None:
    scaled = precision.scaled(keras.optimizers.Adam(0.002), "mixed_float16")
    assert isinstance(scaled, keras.optimizers.LossScaleOptimizer)
    described = optim.describe(scaled, from_build=False, rule=RULE)
    assert described["class"] == "Adam"
    assert described["learning_rate"] == pytest.approx(0.002)
    section = described["keras"]
    assert section["class_name"] == "Adam"
    assert section["config"]["learning_rate"] == 0.002

    loaded = optimizer_from(
        {
            "optimizer": section,
            "compile": {"dtype_policy": "mixed_float16", "loss_scale_optimizer": True},
        }
    )
    assert isinstance(loaded, keras.optimizers.LossScaleOptimizer)
    assert isinstance(loaded.inner_optimizer, keras.optimizers.Adam)
    assert float(loaded.inner_optimizer.learning_rate) == pytest.approx(0.002)


@pytest.mark.parametrize("name", ["float32", "mixed_bfloat16"])
def test_other_precisions_are_not_scaled(name: str) -> None:
    adam = keras.optimizers.Adam(0.001)
    assert precision.scaled(adam, name) is adam
    assert optim.unscaled(adam) is adam
