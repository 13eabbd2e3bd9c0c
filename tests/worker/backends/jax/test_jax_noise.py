"""The gradient noise scale under Keras on JAX (:mod:`tuner.worker.backends.jax._noise`): against a
NumPy computation of the same estimator on the same batches and against the analytic truth, in a
child with Keras on JAX over two host CPU devices; its out-of-memory handling, here."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from jax_child import run_jax

from tuner.worker.backends.jax._noise import JaxNoiseMeter

PLANTED = """
import json, sys
import numpy as np, jax, keras
from tuner.core.efficiency import NoiseScale, step_estimates
from tuner.worker.backends.jax._noise import JaxNoiseMeter

keras.distribution.set_distribution(keras.distribution.DataParallel(devices=jax.devices()))
P, SIGMA2, D2, GLOBAL, N, STEPS = 8, 1.0, 0.25, 256, 2, 48
rng = np.random.default_rng(0)
w_star = rng.normal(size=(P, 1)).astype("float32")
d = rng.normal(size=(P, 1))
w = (w_star + d / np.linalg.norm(d) * np.sqrt(D2)).astype("float32")

def batches():
    r = np.random.default_rng(1)
    while True:
        x = r.normal(size=(GLOBAL, P)).astype("float32")
        yield x, (x @ w_star + r.normal(size=(GLOBAL, 1)) * np.sqrt(SIGMA2)).astype("float32")

def numpy_estimate(l2):
    # The same estimator by hand: the per-example gradient of (x.w - y)^2 is 2(x.w - y)x, and
    # an L2 penalty l2 * |w|^2 adds 2 l2 w to every shard's gradient.
    scale, it, w64 = NoiseScale(), batches(), w.astype(np.float64)
    for _ in range(STEPS):
        x, y = (a.astype(np.float64) for a in next(it))
        grads = [(2 * (xs @ w64 - ys) * xs).mean(0) + 2 * l2 * w64[:, 0]
                 for xs, ys in zip(np.split(x, N), np.split(y, N))]
        mean = np.mean(grads, axis=0)
        scale.update(*step_estimates(N, GLOBAL // N, np.mean([g @ g for g in grads]), mean @ mean))
    return scale.value

out = {"truth": ((P + 1) * D2 + P * SIGMA2) / D2}
for l2 in (0.0, 0.5):
    regularizer = keras.regularizers.L2(l2) if l2 else None
    model = keras.Sequential([keras.Input((P,)), keras.layers.Dense(
        1, use_bias=False, kernel_regularizer=regularizer)])
    model.compile(optimizer="sgd", loss="mse")
    model.set_weights([w])
    meter = JaxNoiseMeter(model, batches(), GLOBAL, N, STEPS)
    value = meter.measure()
    out[str(l2)] = {
        "value": value,
        "numpy": numpy_estimate(l2),
        "steps": meter.measured_steps,
        "history": meter.scale.history,
        "per_replica_batch": meter.per_replica_batch,
        "unchanged": bool(np.array_equal(model.get_weights()[0], w)),
    }
out["tensorflow"] = "tensorflow" in sys.modules
print(json.dumps(out))
"""


@pytest.mark.slow
def test_noise_scale_matches_numpy_and_the_analytic_truth():
    """A linear model held at ``w* + d`` on ``y = x·w* + ε`` (the analytic case of
    tests/worker/backends/tensorflow/test_noise_scale.py: ``B_simple = ((p + 1)‖d‖² + pσ²) /
    ‖d‖²``): the meter gives exactly the NumPy estimator on the same batches, regularization
    included, near the truth."""
    out = run_jax(PLANTED)
    assert out["tensorflow"] is False
    for l2 in ("0.0", "0.5"):
        case = out[l2]
        assert case["value"] == pytest.approx(case["numpy"], rel=1e-4)
        assert case["steps"] == 48 and case["per_replica_batch"] == 128
        assert case["history"] == [case["value"]]
        assert case["unchanged"]
    # The penalty's gradient is the same on both shards: it adds to |G|^2, not to S.
    assert out["0.5"]["value"] < 0.8 * out["0.0"]["value"]
    assert out["truth"] / 1.5 < out["0.0"]["value"] < out["truth"] * 1.5


STATEFUL = """
import json, sys
import numpy as np, jax, keras
from tuner.worker.backends.jax import _noise as jax_noise

keras.distribution.set_distribution(keras.distribution.DataParallel(devices=jax.devices()))
traces = []
make_step = jax_noise._make_step

def counting_make_step(*args):
    step = make_step(*args)
    def counted(*a):
        traces.append(1)  # runs once per trace, not per call
        return step(*a)
    return counted

jax_noise._make_step = counting_make_step

def twice(x, y):  # both shards of each global batch see the same examples
    r = np.random.default_rng(0)
    while True:
        xs, ys = x(r), y(r)
        yield np.concatenate([xs, xs]), np.concatenate([ys, ys])

out = {}
keras.config.set_dtype_policy("mixed_bfloat16")
model = keras.Sequential([
    keras.Input((6,)), keras.layers.Dense(16, activation="relu"),
    keras.layers.BatchNormalization(), keras.layers.Dropout(0.3), keras.layers.Dense(3)])
model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
before = [np.copy(v) for v in model.get_weights()]
batches = twice(lambda r: r.normal(size=(32, 6)).astype("float32"),
                lambda r: r.integers(0, 3, size=(32,)))
meter = jax_noise.JaxNoiseMeter(model, batches, 64, 2, 4)
out["values"] = [meter.measure(), meter.measure()]
out["steps"] = meter.measured_steps
out["traces"] = len(traces)
out["unchanged"] = all(np.array_equal(a, b) for a, b in zip(before, model.get_weights()))
keras.config.set_dtype_policy("float32")
for rate in (0.0, 0.5):
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dropout(rate), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    batches = twice(lambda r: r.normal(size=(32, 6)).astype("float32"),
                    lambda r: r.normal(size=(32, 1)).astype("float32"))
    out[f"dropout {rate}"] = jax_noise.JaxNoiseMeter(model, batches, 64, 2, 4).measure()
out["tensorflow"] = "tensorflow" in sys.modules
print(json.dumps(out))
"""


@pytest.mark.slow
def test_stateful_layers_and_mixed_precision():
    """Batch norm, dropout and bfloat16 compute: weights and statistics are left as they were,
    the step is traced once, and each shard draws its own dropout masks (two shards of identical
    examples differ only by dropout: no noise without it, some with it)."""
    out = run_jax(STATEFUL)
    assert out["tensorflow"] is False
    assert all(v is not None and v > 0 for v in out["values"])
    assert out["steps"] == 8
    assert out["traces"] == 1
    assert out["unchanged"]
    assert out["dropout 0.0"] is None  # identical shards: S = 0, no estimate
    assert out["dropout 0.5"] is not None and out["dropout 0.5"] > 0


class _Model:
    def __init__(self) -> None:
        self.trainable_variables: list[Any] = []
        self.non_trainable_variables: list[Any] = []


def _batches() -> Any:
    while True:
        yield np.zeros((4, 3), np.float32), np.zeros((4, 1), np.float32)


def _raising(exc: BaseException) -> Any:
    def step(*args: Any) -> Any:
        raise exc

    return step


def test_out_of_memory_stops_the_measurement():
    meter = JaxNoiseMeter(_Model(), _batches(), 4, 2, 3)
    oom = RuntimeError("RESOURCE_EXHAUSTED: Out of memory allocating 123 bytes")
    meter._step = _raising(oom)
    assert meter.measure() is None
    assert meter.stopped == "the measurement ran out of memory (RuntimeError)"
    assert meter.scale.history == [None]
    assert meter.measure() is None  # stopped: no more steps
    assert meter.scale.history == [None]


def test_other_errors_are_raised():
    meter = JaxNoiseMeter(_Model(), _batches(), 4, 2, 3)
    meter._step = _raising(ValueError("shapes do not match"))
    with pytest.raises(ValueError, match="shapes"):
        meter.measure()
    assert meter.stopped is None


@pytest.mark.parametrize(
    ("global_batch", "replicas", "message"),
    [(8, 1, "at least 2 replicas"), (9, 2, "does not split")],
)
def test_refuses_what_it_cannot_measure(global_batch, replicas, message):
    with pytest.raises(ValueError, match=message):
        JaxNoiseMeter(_Model(), _batches(), global_batch, replicas, 3)
