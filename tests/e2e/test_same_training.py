"""Each configuration trains once, with real TensorFlow on two CPU replicas and real SQLite: at
the base batch the rules none, linear and sqrt give one learning rate, so one child trains it and
the other two grid points are recorded ``same_as`` it; with ``--no-noise-scale`` no child
measures the noise scale, and arrays in memory do not make a trial input-bound."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from conftest import run_tuner, write_spec


@pytest.mark.slow
def test_the_base_batch_points_of_three_rules_train_once(tmp_path: Path) -> None:
    write_spec(tmp_path / "s.toml", name="same", base=64, multipliers="[1, 2]")
    searched = run_tuner(
        "search", "--spec", "s.toml", "--storage", "sqlite:///s.db", "--cpu-replicas", "2",
        "--no-baseline", "--no-noise-scale", "--seeds", "1", "--max-repeats", "1",
        cwd=tmp_path,
    )  # fmt: skip
    assert searched.returncode == 0, searched.stderr
    study = optuna.load_study(study_name="same", storage=f"sqlite:///{tmp_path}/s.db")
    trials = study.get_trials()
    assert len(trials) == 6 and all(t.state.name == "COMPLETE" for t in trials)
    # A child leaves its phase timings on the trial; a same_as trial ran none.
    children = [t for t in trials if "timings" in t.user_attrs]
    assert len(children) == 4  # batch 64 once, batch 128 once per rule
    for child in children:  # --no-noise-scale: no measurement taken, none of its time spent
        assert "gradient_noise_scale" not in child.user_attrs
        assert child.user_attrs["timings"]["noise_scale_s"] == 0.0
    base = [t for t in trials if t.params["global_batch_size"] == 64]
    (original,) = [t for t in base if "same_as" not in t.user_attrs]
    twins = [t for t in base if t is not original]
    # Arrays in memory feed faster than the model trains at batch 64: not input-bound (a slow
    # pipeline is: tests/e2e/test_real_inputs.py).
    assert original.user_attrs["input_bound"] is False, original.user_attrs
    assert original.user_attrs["input_throughput"] > original.user_attrs["throughput"]
    assert sorted(t.params["lr_rule"] for t in base) == ["linear", "none", "sqrt"]
    for twin in twins:
        assert twin.user_attrs["same_as"] == original.number
        assert twin.values == original.values
        assert twin.user_attrs["training_key"] == original.user_attrs["training_key"]
        assert f"same training as #{original.number}" in searched.stderr + searched.stdout
    wide = {t.user_attrs["training_key"] for t in trials if t.params["global_batch_size"] == 128}
    assert len(wide) == 3 and not any("same_as" in t.user_attrs for t in children)
    assert original.user_attrs["repeats"] == [original.values[1]]
    # Two epochs are one warm-up window and one timed one: no interval from a single window.
    assert original.user_attrs["run_throughput"] == original.values[1]
    assert "throughput_ci" not in original.user_attrs
