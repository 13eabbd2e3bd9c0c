"""What ``tuner validate`` compares under Keras on JAX
(:mod:`tuner.worker.backends.jax._evidence`): read in a child that trains a tiny model with Keras
on JAX over one and two host CPU devices; the backend-independent pieces here."""

from __future__ import annotations

import numpy as np
import pytest
from jax_child import run_jax

from tuner.worker.backends.jax._evidence import peak_memory_per_device, replica_mean_loss

EVIDENCE = """
import json, sys
from itertools import islice
import numpy as np, jax, keras
from tuner.worker.backends.jax._evidence import (
    ShardCounter, peak_memory_per_device, replica_mean_loss, variable_copies, variable_devices)

GLOBAL, STEPS = 8, 3

def batches():
    r = np.random.default_rng(0)
    while True:
        x = r.normal(size=(GLOBAL, 4)).astype("float32")
        yield x, x.sum(axis=1, keepdims=True)

def run(devices):
    counter = ShardCounter()  # made before the distribution is set: it reads it on first use
    keras.distribution.set_distribution(keras.distribution.DataParallel(devices=devices))
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    model.fit(counter.wrap(batches()), steps_per_epoch=STEPS, epochs=1, verbose=0)
    stepped, per_step = ShardCounter(), []
    wrapped = stepped.wrap(batches())
    for _ in range(STEPS):
        batch = next(wrapped)
        per_step.append(stepped.per_device())
    unchanged = all(np.array_equal(a, b) for a, b in zip(batch, list(islice(batches(), STEPS))[-1]))
    copies = variable_copies(model)
    x, y = next(batches())
    y_pred = model.predict(x, verbose=0)
    bug = float(replica_mean_loss("mse", len(devices))(y, y_pred))
    right = float(keras.losses.MeanSquaredError()(y, y_pred))
    return {
        "per_step": per_step,
        "unchanged": unchanged,
        "per_device": counter.per_device(),
        "counter_devices": [str(d) for d in counter.devices],
        "variables": len(copies),
        "expected_variables": len(model.weights) + len(model.optimizer.variables),
        "copies": sorted({len(c) for c in copies}),
        "equal": all(np.array_equal(c[0], other) for c in copies for other in c[1:]),
        "devices": variable_devices(model),
        "bug_ratio": bug / right,
        "peaks": peak_memory_per_device(devices),
    }

out = {"two": run(jax.devices()), "one": run(jax.devices()[:1])}

class Drifted:  # one variable whose two replicated copies hold different values
    optimizer = None
    sharding = jax.sharding.NamedSharding(
        jax.sharding.Mesh(np.array(jax.devices()), ("batch",)), jax.sharding.PartitionSpec())
    weights = [jax.make_array_from_single_device_arrays((2,), sharding, [
        jax.device_put(np.full(2, float(i), np.float32), d) for i, d in enumerate(jax.devices())])]

out["drifted"] = [c.tolist() for c in variable_copies(Drifted())[0]]
out["all_devices"] = [str(d) for d in jax.devices()]
out["tensorflow"] = "tensorflow" in sys.modules
print(json.dumps(out))
"""


@pytest.mark.slow
def test_evidence_on_one_and_two_devices():
    """Keras fit under ``DataParallel``: each of two devices receives half of every global batch
    (one device all of it; in total, the steps trained: the batch Keras peeks at to learn the
    data's shapes is counted once), every variable has one equal copy per device, the bug loss is
    ``replicas`` times the right one, and CPU devices keep no memory statistics."""
    out = run_jax(EVIDENCE)
    assert out["tensorflow"] is False
    two, one = out["two"], out["one"]
    assert two["per_step"] == [[4, 4], [8, 8], [12, 12]]
    assert two["per_device"] == [12, 12]
    assert two["counter_devices"] == out["all_devices"]
    assert one["per_step"] == [[8], [16], [24]]
    assert one["counter_devices"] == out["all_devices"][:1]
    for case, n in ((two, 2), (one, 1)):
        assert case["unchanged"]
        assert case["variables"] == case["expected_variables"] > 4  # weights and optimizer slots
        assert case["copies"] == [n]
        assert case["equal"]
        assert case["bug_ratio"] == pytest.approx(n, rel=1e-5)
        assert case["peaks"] == [None] * n
    assert out["drifted"] == [[0.0, 0.0], [1.0, 1.0]]  # each device's own copy is read
    assert two["devices"] == sorted(out["all_devices"])
    assert one["devices"] == out["all_devices"][:1]


def test_replica_mean_loss_sums_the_shard_means():
    """Backend-independent (``keras.ops``): per shard a mean, over shards a sum; a batch that does
    not split into the replicas gets what equal shards would give."""
    y = np.array([[0.0], [0.0], [0.0], [0.0]], np.float32)
    pred = np.array([[1.0], [2.0], [3.0], [4.0]], np.float32)
    squares = (pred - y)[:, 0] ** 2
    shard_means = [squares[:2].mean(), squares[2:].mean()]
    assert float(replica_mean_loss("mse", 2)(y, pred)) == pytest.approx(sum(shard_means))
    assert float(replica_mean_loss("mse", 1)(y, pred)) == pytest.approx(squares.mean())
    assert float(replica_mean_loss("mse", 3)(y, pred)) == pytest.approx(3 * squares.mean())


class _Device:
    def __init__(self, stats: dict[str, int] | None) -> None:
        self._stats = stats

    def memory_stats(self) -> dict[str, int] | None:
        return self._stats


def test_peak_memory_per_device():
    devices = [
        _Device({"peak_bytes_in_use": 1024, "bytes_in_use": 10}),
        _Device(None),
        _Device({"bytes_in_use": 10}),
    ]
    assert peak_memory_per_device(devices) == [1024, None, None]
