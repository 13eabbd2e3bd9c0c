"""``tuner lr-find`` end to end: real children on 2 CPU replicas train the noisy quadratic model
(:mod:`lr_find_workloads`) under TensorFlow and JAX, and ``tuner.lr_find`` trains the Keras
example's MNIST convnet defined as in a notebook, each with the build's compiled optimizer; the
suggestion is checked against the model's known divergence rate and the best fixed rate
simulated in NumPy."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import lr_find_workloads as nqm
import pytest
from conftest import run_tuner, tuner_env

NQM_SPEC = """
[study]
name = "nqm"

[workload]
model = "lr_find_workloads:build_model"
data = "lr_find_workloads:load_data"

[search]
base_batch_size = 64
batch_multipliers = [1]
lr_rules = ["none"]
base_lr = 0.01
epochs = 2
"""
NOTEBOOK = """
import json
import keras
import numpy as np
from keras import layers
import tuner

def build_model():  # keras-io examples/vision/mnist_convnet, as a notebook cell defines it
    model = keras.Sequential([
        keras.Input(shape=(28, 28, 1)),
        layers.Conv2D(32, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Conv2D(64, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Flatten(),
        layers.Dropout(0.5),
        layers.Dense(10, activation="softmax"),
    ])
    model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
    return model

def load_data():  # MNIST-shaped: the label is the brightest of ten stripes
    rng = np.random.default_rng(0)
    y = rng.integers(0, 10, size=640)
    x = rng.random((640, 28, 28), dtype=np.float32) * 0.5
    for i, label in enumerate(y):
        x[i, :, 2 + 2 * label : 4 + 2 * label] += 0.5
    x, y = np.expand_dims(x, -1), keras.utils.to_categorical(y, 10)
    return x[:512], y[:512], x[512:], y[512:]

found = tuner.lr_find(model=build_model, data=load_data, cpu_replicas=2, base_batch_size=32,
                      steps=100, max_lr=1.0, plot="figure.html")
print("RESULT " + json.dumps({"suggestion": found.suggestion, "line": found.spec_line,
                              "report": found.report}))
"""


def _lr_find(tmp_path: Path, spec: str, *extra: str) -> tuple[dict, str]:
    (tmp_path / "spec.toml").write_text(spec)
    result = run_tuner(
        "lr-find",
        "--spec",
        "spec.toml",
        "--cpu-replicas",
        "2",
        "--output",
        "report.json",
        "--plot",
        "figure.html",
        *extra,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "figure.html" in result.stderr and (tmp_path / "figure.html").stat().st_size > 1000
    return json.loads((tmp_path / "report.json").read_text()), result.stdout


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_on_the_noisy_quadratic_the_suggestion_is_safe_and_near_the_best(
    tmp_path: Path, backend: str
) -> None:
    report, stdout = _lr_find(tmp_path, NQM_SPEC, "--backend", backend)
    suggestion = report["suggestion"]
    best = nqm.best_fixed_rate(steps=200, batch=64)
    assert suggestion is not None, report["reason"]
    assert suggestion < nqm.DIVERGES_ABOVE, report
    assert best / 10 < suggestion < best * 10, (suggestion, best)
    assert report["stopped"] == "diverged" and report["steps_run"] < report["planned_steps"]
    assert report["diverged_lr"] > suggestion
    assert report["optimizer"]["class"] == "SGD" and report["optimizer"]["from_build"]
    assert (report["backend"], report["num_replicas"], report["global_batch_size"]) == (
        backend,
        2,
        64,
    )
    assert f"base_lr = {suggestion:.2g}" in stdout and "tuner search --base-lr" in stdout


@pytest.mark.slow
def test_from_python_on_the_keras_examples_mnist_convnet(tmp_path: Path) -> None:
    # Run as `python -c`: the functions live in __main__, as in a notebook, and are shipped.
    result = subprocess.run(
        [sys.executable, "-c", NOTEBOOK],
        cwd=tmp_path,
        env=tuner_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    line = next(x for x in result.stdout.splitlines() if x.startswith("RESULT "))
    found = json.loads(line.removeprefix("RESULT "))
    report = found["report"]
    assert report["optimizer"]["class"] == "Adam" and report["optimizer"]["from_build"]
    assert report["steps_run"] > 20 and report["global_batch_size"] == 32
    assert found["suggestion"] is not None, report["reason"]
    assert 1e-5 < found["suggestion"] < 1e-1
    assert found["line"] == f"base_lr = {found['suggestion']:.2g}"
    assert (tmp_path / "figure.html").stat().st_size > 1000
