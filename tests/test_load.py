"""``tuner.load_recommendation``: a recommended-config JSON back as a Keras optimizer and the
arguments of ``fit`` (Keras only; no training here: the real one is in
tests/e2e/test_export_training.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import tuner
from tuner.core.errors import ConfigError
from tuner.core.optimizers import serialized, trained_config
from tuner.core.recommend._export import SCHEMA_VERSION
from tuner.load import fit_kwargs, trial_budget_of

ADAM = {"learning_rate": 2e-3, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7}


def write(tmp_path: Path, optimizer: dict[str, Any]) -> Path:
    path = tmp_path / "rec.json"
    doc = {
        "schema_version": SCHEMA_VERSION,
        "recommended": {"global_batch_size": 128, "learning_rate": 2e-3, "optimizer": optimizer},
        "fit": {"batch_size": 128},
        "evidence": {"trial_budget": {"epochs": 3}},
        "learning_rate": 2e-3,
    }
    path.write_text(json.dumps(doc))
    return path


def _doc(**sections: Any) -> str:
    adam = {"module": "keras.optimizers", "class_name": "Adam", "config": ADAM}
    doc = {"schema_version": SCHEMA_VERSION, "fit": {"batch_size": 64}, "optimizer": adam}
    return json.dumps(doc | sections)


def test_a_version_1_file_still_loads_from_its_optimizer_section(tmp_path: Path) -> None:
    path = tmp_path / "v1.json"
    adam = {"module": "keras.optimizers", "class_name": "Adam", "config": ADAM}
    v1 = {"schema_version": 1, "fit": {"batch_size": 64, "epochs": 2}, "optimizer": adam}
    path.write_text(json.dumps(v1 | {"learning_rate": 2e-3, "precision": "mixed_bfloat16"}))
    rec = tuner.load_recommendation(path)
    assert type(rec.optimizer).__name__ == "Adam" and rec.learning_rate == 2e-3
    assert rec.precision == "mixed_bfloat16" and rec.fit_kwargs == {"batch_size": 64}
    assert rec.trial_budget == {"epochs": 2}  # the trial's, never the user's fit's


def test_the_recommended_block_is_read_first(tmp_path: Path) -> None:
    sgd = {"module": "keras.optimizers", "class_name": "SGD", "config": {"learning_rate": 0.5}}
    block = {"learning_rate": 0.5, "optimizer": sgd, "precision": "mixed_bfloat16"}
    path = tmp_path / "v2.json"
    path.write_text(_doc(recommended=block, learning_rate=0.1))
    rec = tuner.load_recommendation(path)
    assert type(rec.optimizer).__name__ == "SGD" and rec.learning_rate == 0.5
    assert rec.precision == "mixed_bfloat16"


def test_sqrt_adam_comes_back_with_its_moments(tmp_path: Path) -> None:
    rule = {"name": "sqrt-adam", "ratio": 4.0, "base_lr": 1e-3, "learning_rate": 2e-3}
    path = write(tmp_path, serialized("Adam", trained_config(ADAM, rule)))
    rec = tuner.load_recommendation(path)
    config = rec.optimizer.get_config()
    assert type(rec.optimizer).__name__ == "Adam"
    assert (config["beta_1"], config["beta_2"]) == (pytest.approx(0.6), pytest.approx(0.996))
    assert config["epsilon"] == pytest.approx(1e-7 / 2)
    assert float(rec.optimizer.learning_rate) == pytest.approx(2e-3, rel=1e-7)
    assert rec.fit_kwargs == {"batch_size": 128} and rec.batch_size == 128
    assert rec.trial_budget == {"epochs": 3}
    assert rec.learning_rate == 2e-3
    assert rec.new_optimizer() is not rec.optimizer


def test_linear_warmup_comes_back_as_the_same_ramp(tmp_path: Path) -> None:
    rule = {"name": "linear-warmup", "base_lr": 1e-3, "learning_rate": 4e-3, "warmup_steps": 8}
    path = write(tmp_path, serialized("SGD", trained_config({"momentum": 0.7}, rule)))
    first, second = (tuner.load_recommendation(path).optimizer for _ in range(2))  # no mutation
    rates = []
    for step in (0, 4, 8, 1000):
        second.iterations.assign(step)
        rates.append(float(second.learning_rate))
    assert rates == pytest.approx([1e-3, 2.5e-3, 4e-3, 4e-3], rel=1e-6)
    assert type(first).__name__ == "SGD" and first.get_config()["momentum"] == 0.7


def test_fit_kwargs_hold_the_batch_and_nothing_that_limits_training() -> None:
    # 46: {"batch_size": 64, "epochs": 1, "steps_per_epoch": 32} from a 2,048-sample search
    # trained a user's model 32 steps. A version 2 file's budget is read as the trial's.
    assert fit_kwargs({"batch_size": 64, "steps": 32}) == {"batch_size": 64}
    assert fit_kwargs({"batch_size": 64, "epochs": 2}) == {"batch_size": 64}
    v2 = {"schema_version": 2, "fit": {"batch_size": 64, "steps": 32}}
    assert trial_budget_of(v2) == {"steps": 32}
    v3 = {"fit": {"batch_size": 64}, "evidence": {"trial_budget": {"train_samples": 2048}}}
    assert trial_budget_of(v3) == {"train_samples": 2048}
    assert trial_budget_of({"fit": {"batch_size": 64}, "evidence": {}}) == {}


def test_a_version_2_file_with_a_sample_budget_loads_without_it_in_fit(tmp_path: Path) -> None:
    path = tmp_path / "v2.json"
    adam = {"module": "keras.optimizers", "class_name": "Adam", "config": ADAM}
    v2 = {
        "schema_version": 2,
        "recommended": {"global_batch_size": 64, "learning_rate": 2e-3, "optimizer": adam},
        "fit": {"batch_size": 64, "steps": 32},
        "learning_rate": 2e-3,
    }
    path.write_text(json.dumps(v2))
    rec = tuner.load_recommendation(path)
    assert rec.fit_kwargs == {"batch_size": 64} and rec.trial_budget == {"steps": 32}


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (None, "cannot read the recommended config"),
        ("{not json", "is not a recommended-config JSON"),
        ('{"study_name": "old", "global_batch_size": 64}', "has no schema_version"),
        (json.dumps({"schema_version": SCHEMA_VERSION + 1}), "pip install -U mirrortuner"),
        (json.dumps({"schema_version": True}), "has schema_version True"),
        (json.dumps({"schema_version": 0}), "has schema_version 0"),
        (json.dumps({"schema_version": SCHEMA_VERSION, "fit": {}}), "has no optimizer section"),
        (
            json.dumps({"schema_version": 2, "fit": {"batch_size": 64}, "recommended": {}}),
            "has no optimizer section",
        ),
        (_doc(fit={"epochs": 3}), r"fit.batch_size must be a positive integer, got None"),
        (_doc(fit={"batch_size": "x"}), r"fit.batch_size must be a positive integer, got 'x'"),
        (_doc(fit={"batch_size": 64, "steps": 0}), "fit.steps must be a positive integer"),
        (
            _doc(optimizer={"class_name": "NoSuchOptimizer", "config": {}}),
            "the optimizer section cannot be built",
        ),
    ],
)
def test_a_file_it_cannot_use_is_one_clear_error(
    tmp_path: Path, content: str | None, fragment: str
) -> None:
    path = tmp_path / "rec.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError, match=fragment) as caught:
        tuner.load_recommendation(path)
    assert "\n" not in str(caught.value)


def test_the_loader_is_public() -> None:
    assert "load_recommendation" in tuner.__all__
    assert tuner.load_recommendation is tuner.load.load_recommendation
