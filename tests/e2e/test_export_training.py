"""The rules that shape the optimizer, and an exported config that trains a model: a real search
(two CPU replicas, real SQLite) with ``sqrt-adam`` and ``linear-warmup`` at 1x and 4x the base
batch, whose trials' optimizers are the literature's; ``tuner export``, then in a fresh process
``tuner.load_recommendation`` -> ``compile`` -> ``fit`` under ``MirroredStrategy``, and the
optimizer it trains with is the one each trial trained with."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import pytest
from conftest import SMALL_REGRESSION, run_tuner, tuner_env

from tuner.core.recommend._export import optimizer_section
from tuner.core.record import decode

pytestmark = pytest.mark.slow

TRAIN = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import keras
    import tuner
    from tuner.workloads.regression import build_model

    def state(optimizer):
        config = optimizer.get_config()
        return {
            "class": type(optimizer).__name__,
            # A constant rate is a MirroredVariable under the strategy: float() refuses it.
            "learning_rate": float(keras.ops.convert_to_numpy(optimizer.learning_rate)),
            "iterations": int(np.asarray(optimizer.iterations)),
            "schedule": config["learning_rate"] if isinstance(config["learning_rate"], dict)
            else None,
            **{key: config.get(key) for key in ("beta_1", "beta_2", "epsilon")},
        }

    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    rng = np.random.default_rng(0)
    x = rng.random((2048, 10), dtype=np.float32)
    y = x.sum(axis=1, keepdims=True)
    report = {"replicas": strategy.num_replicas_in_sync}
    with strategy.scope():
        rec = tuner.load_recommendation(sys.argv[1])
        model = build_model()
        model.compile(optimizer=rec.optimizer, loss="mse")
    history = model.fit(x, y, epochs=2, verbose=0, **rec.fit_kwargs)  # the epochs are the user's
    report["fit_kwargs"] = rec.fit_kwargs
    report["losses"] = history.history["loss"]
    report["trained"] = state(model.optimizer)
    report["sections"] = {}
    for path in sys.argv[2:]:  # every trial's optimizer section, deserialized and stepped
        optimizer = keras.optimizers.deserialize(json.loads(open(path).read()))
        optimizer.iterations.assign(10_000)  # past any warm-up
        report["sections"][path] = state(optimizer)
    print("REPORT " + json.dumps(report))
    """
)


def f32(value: float) -> float:
    """The value as Keras trains with it (a float32 variable or constant)."""
    return float(np.float32(value))


def assert_same_optimizer(used: dict[str, Any], trial: optuna.trial.FrozenTrial) -> None:
    """``used`` (what the loaded optimizer holds past any warm-up) is what ``trial`` trained
    with (its ``optimizer`` attribute and the rate its optimizer held at the end)."""
    described = decode(trial).result.optimizer
    assert used["class"] == described["class"] == "Adam"
    assert used["learning_rate"] == f32(decode(trial).result.optimizer_learning_rate)
    for key in ("beta_1", "beta_2", "epsilon"):
        assert f32(used[key]) == f32(described[key]), key
    warmup = described.get("warmup")
    if warmup:  # the same ramp: from the base rate to the peak over the same steps
        schedule = used["schedule"]["config"]
        assert (schedule["initial_learning_rate"], schedule["warmup_target"]) == (
            warmup["from"],
            pytest.approx(warmup["to"], rel=1e-14),
        )
        assert schedule["warmup_steps"] == warmup["steps"]
    else:
        assert used["schedule"] is None


def test_an_exported_config_compiles_and_fits_with_the_trials_optimizer(tmp_path: Path) -> None:
    spec = SMALL_REGRESSION.format(
        name="exp", base=256, multipliers="[1, 4]", rules='["sqrt-adam", "linear-warmup"]'
    )
    (tmp_path / "s.toml").write_text(spec)
    url = "sqlite:///s.db"
    searched = run_tuner(
        "search", "--spec", "s.toml", "--storage", url, "--cpu-replicas", "2",
        "--no-baseline", "--no-noise-scale", cwd=tmp_path,
    )  # fmt: skip
    assert searched.returncode == 0, searched.stderr
    exported = run_tuner(
        "export", "--storage", url, "--study-name", "exp", "--output", "rec.json", cwd=tmp_path
    )
    assert exported.returncode == 0, exported.stderr
    rec = json.loads((tmp_path / "rec.json").read_text())
    assert rec["provenance"]["optimizer_config_source"] == "trained"
    assert rec["provenance"]["storage"] == url

    study = optuna.load_study(study_name="exp", storage=f"sqlite:///{tmp_path}/s.db")
    by_point = {(t.params["global_batch_size"], t.params["lr_rule"]): t for t in study.trials}
    assert set(by_point) == {(b, r) for b in (256, 1024) for r in ("sqrt-adam", "linear-warmup")}
    # The literature's rules as they reached the optimizer, at k = 4.
    adam = decode(by_point[(1024, "sqrt-adam")]).flat["optimizer"]
    assert adam["class"] == "Adam"
    assert adam["learning_rate"] == pytest.approx(2e-3, rel=1e-6)  # √4 × 1e-3
    assert adam["beta_1"] == pytest.approx(0.6) and adam["beta_2"] == pytest.approx(0.996)
    assert adam["epsilon"] == pytest.approx(1e-7 / 2)
    base = decode(by_point[(256, "sqrt-adam")]).flat["optimizer"]
    assert base["beta_1"] == pytest.approx(0.9)  # k = 1: Adam's own settings
    warm = by_point[(1024, "linear-warmup")]
    warmup = decode(warm).result.optimizer["warmup"]
    steps = decode(warm).result.steps_per_epoch
    assert warmup == {"from": 1e-3, "to": pytest.approx(4e-3), "steps": steps}  # one epoch
    # After the ramp the optimizer holds the peak rate.
    assert decode(warm).result.optimizer_learning_rate == pytest.approx(4e-3, rel=1e-6)

    sections = {}
    for point, trial in by_point.items():  # the optimizer section of each, as export builds it
        section, source = optimizer_section(decode(trial).flat, "adam", decode(trial).flat)
        assert source == "trained", point
        sections[trial.number] = tmp_path / f"{trial.number}.json"
        sections[trial.number].write_text(json.dumps(section))

    trained = subprocess.run(
        [sys.executable, "-c", TRAIN, "rec.json", *map(str, sections.values())],
        cwd=tmp_path,
        env=tuner_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert trained.returncode == 0, trained.stderr[-3000:]
    (line,) = [x for x in trained.stdout.splitlines() if x.startswith("REPORT ")]
    report = json.loads(line.removeprefix("REPORT "))
    chosen = study.trials[rec["trial_number"]]
    batch = chosen.params["global_batch_size"]
    assert rec["fit"] == {"batch_size": batch}  # nothing that limits the user's training
    assert rec["evidence"]["trial_budget"] == {"epochs": 2}  # the trial's, as evidence
    assert report["replicas"] == 2
    assert report["fit_kwargs"] == {"batch_size": batch}
    assert len(report["losses"]) == 2 and all(np.isfinite(report["losses"]))
    # 2,048 samples at the chosen global batch, two epochs.
    iterations = report["trained"]["iterations"]
    assert iterations == 2 * 2048 // batch
    used = dict(report["trained"])
    if used["schedule"] is not None:  # a ramp: the steps taken may end inside it, at its rate then
        schedule = used["schedule"]["config"]
        fraction = min(iterations / schedule["warmup_steps"], 1.0)
        start, peak = schedule["initial_learning_rate"], schedule["warmup_target"]
        assert used["learning_rate"] == pytest.approx(start + (peak - start) * fraction, rel=1e-6)
        used["learning_rate"] = report["sections"][str(sections[chosen.number])]["learning_rate"]
    assert_same_optimizer(used, chosen)
    for number, path in sections.items():
        assert_same_optimizer(report["sections"][str(path)], study.trials[number])
