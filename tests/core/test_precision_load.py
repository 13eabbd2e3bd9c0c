"""``tuner.load_recommendation`` hands a training script the recommended precision: the dtype
policy to set before building the model, and under mixed_float16 the optimizer loss-scaled as
the trial's was (Keras only, no training)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import keras

import tuner
from tuner.core.recommend._export import SCHEMA_VERSION

ADAM = {"module": "keras.optimizers", "class_name": "Adam", "config": {"learning_rate": 1e-3}}


def write(tmp_path: Path, **keys: Any) -> Path:
    path = tmp_path / "rec.json"
    doc = {"schema_version": SCHEMA_VERSION, "fit": {"batch_size": 64}, "optimizer": ADAM}
    path.write_text(json.dumps(doc | keys), encoding="utf-8")
    return path


def test_mixed_float16_comes_back_loss_scaled_and_sets_its_policy(tmp_path: Path) -> None:
    compile_section = {"dtype_policy": "mixed_float16", "loss_scale_optimizer": True}
    rec = tuner.load_recommendation(
        write(tmp_path, compile=compile_section, precision="mixed_float16")
    )
    assert rec.precision == "mixed_float16"
    assert isinstance(rec.optimizer, keras.optimizers.LossScaleOptimizer)
    assert isinstance(rec.new_optimizer(), keras.optimizers.LossScaleOptimizer)
    before = keras.mixed_precision.global_policy().name
    try:
        assert rec.set_precision() == "mixed_float16"
        assert keras.mixed_precision.global_policy().name == "mixed_float16"
    finally:
        keras.mixed_precision.set_global_policy(before)


def test_bfloat16_is_not_loss_scaled_and_older_files_are_float32(tmp_path: Path) -> None:
    bf16 = {"dtype_policy": "mixed_bfloat16", "loss_scale_optimizer": False}
    rec = tuner.load_recommendation(write(tmp_path, compile=bf16))
    assert rec.precision == "mixed_bfloat16"
    assert not isinstance(rec.optimizer, keras.optimizers.LossScaleOptimizer)
    old = tuner.load_recommendation(write(tmp_path))  # written before precisions were
    assert old.precision == "float32"
    assert type(old.optimizer).__name__ == "Adam"
