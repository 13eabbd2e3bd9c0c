"""The JAX noise meter measures through Keras's API (issue 28): batches unpacked as Keras unpacks
them, the loss from ``model.compute_loss_and_updates`` (Keras's stateless ``compute_loss``), in a
child with Keras on JAX over two host CPU devices: sample weights against a NumPy computation of
the same estimator; the functional-API guide's model with several inputs and outputs, dict
targets and sample weights measured without touching the model; a custom ``train_step`` that
hides its loss refused up front."""

from __future__ import annotations

from pathlib import Path

import pytest
from jax_child import run_jax

pytestmark = pytest.mark.slow

TESTS = Path(__file__).resolve().parents[3]

SCRIPT = """
import json, sys
import numpy as np, jax, keras
sys.path.insert(0, {tests!r})
from tuner.core.efficiency import NoiseScale, step_estimates
from tuner.worker.backends.jax._noise import JaxNoiseMeter
from tuner.worker.noise import NoiseUnsupported

keras.distribution.set_distribution(keras.distribution.DataParallel(devices=jax.devices()))
P, GLOBAL, N, STEPS = 8, 128, 2, 16
rng = np.random.default_rng(0)
w = rng.normal(size=(P, 1)).astype("float32")

def weighted(seed):
    r = np.random.default_rng(seed)
    while True:
        x = r.normal(size=(GLOBAL, P)).astype("float32")
        y = (x[:, :1] + r.normal(size=(GLOBAL, 1))).astype("float32")
        yield x, y, r.uniform(0.2, 2.0, size=(GLOBAL,)).astype("float32")

def numpy_estimate():
    # Weighted MSE, summed over the batch and divided by its size (Keras's sum_over_batch_size):
    # per example 2 s (x.w - y) x / b.
    scale, it, w64 = NoiseScale(), weighted(1), w.astype(np.float64)
    for _ in range(STEPS):
        x, y, s = (a.astype(np.float64) for a in next(it))
        grads = [(2 * sw[:, None] * (xs @ w64 - ys) * xs).mean(0)
                 for xs, ys, sw in zip(np.split(x, N), np.split(y, N), np.split(s, N))]
        mean = np.mean(grads, axis=0)
        scale.update(*step_estimates(N, GLOBAL // N, np.mean([g @ g for g in grads]), mean @ mean))
    return scale.value

out = {{}}
model = keras.Sequential([keras.Input((P,)), keras.layers.Dense(1, use_bias=False)])
model.compile(optimizer="sgd", loss="mse")
model.set_weights([w])
out["weighted"] = {{"value": JaxNoiseMeter(model, weighted(1), GLOBAL, N, STEPS).measure(),
                   "numpy": numpy_estimate()}}

from tuner_test_workloads import guide_multi_io_model
def multi_io(seed):
    r = np.random.default_rng(seed)
    while True:
        title, body = r.normal(size=(GLOBAL, 8)), r.normal(size=(GLOBAL, 16))
        weight = r.uniform(0.5, 1.5, size=(GLOBAL,)).astype("float32")
        yield ({{"title": title.astype("float32"), "body": body.astype("float32")}},
               {{"priority": (title[:, :1] + 0.1 * r.normal(size=(GLOBAL, 1))).astype("float32"),
                 "department": np.eye(4, dtype="float32")[np.argmax(body[:, :4], axis=1)]}},
               {{"priority": weight, "department": weight}})

guide = guide_multi_io_model()
x, y, s = next(multi_io(5))
guide.fit(x, y, sample_weight=s, batch_size=GLOBAL, epochs=1, verbose=0)
logs = {{k: float(v) for k, v in guide.get_metrics_result().items()}}
weights = [np.copy(v) for v in guide.get_weights()]
meter = JaxNoiseMeter(guide, multi_io(1), GLOBAL, N, STEPS)
out["multi_io"] = {{
    "values": [meter.measure(), meter.measure()],
    "steps": meter.measured_steps,
    "weights_kept": all(np.array_equal(a, b) for a, b in zip(weights, guide.get_weights())),
    "logs_kept": logs == {{k: float(v) for k, v in guide.get_metrics_result().items()}},
    "logs": sorted(logs),
}}

class OwnStep(keras.Model):
    def train_step(self, state, data):
        raise NotImplementedError

inputs = keras.Input((P,))
hidden = OwnStep(inputs, keras.layers.Dense(1)(inputs))
hidden.compile(optimizer="sgd")
try:
    JaxNoiseMeter(hidden, weighted(1), GLOBAL, N, STEPS)
    out["hidden"] = None
except NoiseUnsupported as exc:
    out["hidden"] = str(exc)

from tuner.worker.backends.jax._session import evaluate_exactly
val = next(multi_io(9))
val = tuple({{k: v[:101] for k, v in part.items()}} for part in val)  # 101: a sample left over
out["validation"] = evaluate_exactly(guide, val, 20, N)
x, y, s = val
keras.distribution.set_distribution(None)  # one batch of all 101, on one device
out["one_batch"] = float(guide.compute_loss(
    x=x, y=y, y_pred=guide(x, training=False), sample_weight=s, training=False))
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def out():
    return run_jax(SCRIPT.format(tests=str(TESTS)))


def test_sample_weights_weigh_each_shards_gradient_as_keras_does(out):
    case = out["weighted"]
    assert case["value"] == pytest.approx(case["numpy"], rel=1e-4)


def test_the_guide_multi_io_model_is_measured_without_touching_it(out):
    case = out["multi_io"]
    assert all(v is not None and v > 0 for v in case["values"])
    assert case["steps"] == 32
    assert case["weights_kept"] and case["logs_kept"]
    assert {"department_loss", "priority_loss"} <= set(case["logs"])  # trackers compute_loss feeds


def test_a_custom_train_step_without_a_compiled_loss_is_unsupported(out):
    assert "train_step computes its loss" in out["hidden"]


def test_the_validation_loss_is_the_total_of_a_multi_output_model(out):
    """Dict inputs and targets, sample weights per output, two outputs with loss weights, a
    sample left over after the last full split: the model's total loss over every sample."""
    assert out["validation"] == pytest.approx(out["one_batch"], rel=1e-5)
