"""The TensorFlow side measurements and custom loops go through Keras's API (issue 28): batches
unpacked as Keras unpacks them, the loss from ``model.compute_loss``. In a child process with
``MirroredStrategy`` over two logical CPU devices (the pytest process may have started TensorFlow
with one): the noise meter's per-replica squared gradient norms against the gradient of the mean
loss over each half of the batch computed outside the strategy (Keras's ``1 / replicas`` scaling
undone), the validation loss of a model with two outputs and sample weights, and the custom
loops training that model as ``fit`` does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tf_child import run_two_replicas

pytestmark = pytest.mark.slow

TESTS = Path(__file__).resolve().parents[3]

SCRIPT = """
import json, sys
import numpy as np, tensorflow as tf, keras
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
sys.path.insert(0, {tests!r})
from tuner_test_workloads import guide_multi_io_model, guide_multi_io_datasets
from tuner.worker.backends.tensorflow._noise import NoiseMeter
from tuner.worker.noise import NoiseUnsupported

GLOBAL = 64

def by_hand(model, batch):
    # Each half's gradient of its own mean loss (compute_loss outside any strategy: unscaled).
    halves = []
    for i in range(2):
        part = tf.nest.map_structure(lambda t: t[i * 32:(i + 1) * 32], batch)
        x, y, w = keras.utils.unpack_x_y_sample_weight(part)
        with tf.GradientTape() as tape:
            loss = model.compute_loss(x=x, y=y, y_pred=model(x, training=True), sample_weight=w)
        grads = tape.gradient(loss, model.trainable_variables)
        halves.append([g.numpy().astype(np.float64) for g in grads])
    mean_sq = np.mean([sum(float(np.sum(g * g)) for g in h) for h in halves])
    mean = [(a + b) / 2 for a, b in zip(*halves)]
    return mean_sq, sum(float(np.sum(g * g)) for g in mean)

def case(model, dataset):
    model.fit(dataset.batch(GLOBAL, drop_remainder=True).take(4), epochs=1, verbose=0)
    truth = by_hand(model, next(iter(dataset.batch(GLOBAL))))  # updates the loss trackers
    logs = {{k: float(v) for k, v in model.get_metrics_result().items()}}
    weights = [w.copy() for w in model.get_weights()]
    meter = NoiseMeter(strategy, model, dataset.batch(GLOBAL, drop_remainder=True), GLOBAL, 8)
    sample = meter.sample()
    value = meter.measure()
    after = {{k: float(v) for k, v in model.get_metrics_result().items()}}
    return {{
        "sample": sample, "by_hand": truth, "value": value, "steps": meter.measured_steps,
        "logs_kept": logs == after,
        "weights_kept": all(np.array_equal(a, b) for a, b in zip(weights, model.get_weights())),
    }}

def regression(n):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 8)).astype("float32")
    y = x[:, :1] + 0.3 * rng.normal(size=(n, 1)).astype("float32")
    return tf.data.Dataset.from_tensor_slices((x, y))

out = {{}}
with strategy.scope():
    model = guide_multi_io_model()
out["multi_io"] = case(model, guide_multi_io_datasets()[0])

with strategy.scope():
    plain = keras.Sequential([keras.Input((8,)), keras.layers.Dense(
        1, kernel_regularizer=keras.regularizers.L2(0.1))])
    plain.compile(optimizer="sgd", loss="mse")
out["regularized"] = case(plain, regression(1024))

class OwnStep(keras.Model):
    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            loss = keras.ops.mean(keras.ops.abs(self(x, training=True) - y))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply(grads, self.trainable_variables)
        return {{"loss": loss}}

class OwnLoss(OwnStep):
    def compute_loss(self, x, y, y_pred, sample_weight):  # the pre-3.3 signature
        return keras.ops.mean(keras.ops.abs(y_pred - y))

def subclassed(cls, loss):
    with strategy.scope():
        inputs = keras.Input((8,))
        model = cls(inputs, keras.layers.Dense(1)(inputs))
        model.compile(optimizer="sgd", loss=loss)
    return model

try:
    NoiseMeter(strategy, subclassed(OwnStep, None), regression(256).batch(GLOBAL), GLOBAL, 2)
    out["hidden"] = None
except NoiseUnsupported as exc:
    out["hidden"] = str(exc)
out["own_step_compiled"] = case(subclassed(OwnStep, "mae"), regression(1024))
out["own_loss"] = case(subclassed(OwnLoss, None), regression(1024))

from tuner.worker.backends.tensorflow._evaluation import ValidationPass, evaluator
val = guide_multi_io_datasets()[1].take(333).batch(GLOBAL)  # 5 batches of 64, a last of 13
check = evaluator(model, val)
out["validation"] = {{
    "pass": isinstance(check, ValidationPass),
    "value": check(),
    "evaluate": model.evaluate(val, verbose=0, return_dict=True),
}}
x, y, w = next(iter(val.unbatch().batch(1000)))  # all 333 at once, outside the strategy
out["validation"]["one_batch"] = float(model.compute_loss(
    x=x, y=y, y_pred=model(x, training=False), sample_weight=w, training=False))
print(json.dumps(out))
"""


LOOPS = """
import json, sys
import numpy as np, tensorflow as tf, keras
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
sys.path.insert(0, {tests!r})
from tuner_test_workloads import guide_multi_io_model, guide_multi_io_datasets
from tuner.worker.backends.tensorflow._loops import make_loop

keras.utils.set_random_seed(0)
initial = guide_multi_io_model().get_weights()
data = guide_multi_io_datasets()[0].batch(64, drop_remainder=True).take(6)

def build():
    model = guide_multi_io_model()
    model.set_weights(initial)
    return model

def compile_args():
    return {{"optimizer": keras.optimizers.SGD(0.05), "loss": {{
        "priority": keras.losses.MeanSquaredError(),
        "department": keras.losses.CategoricalCrossentropy(from_logits=True)}},
        "loss_weights": {{"priority": 1.0, "department": 0.2}}}}

out = {{}}
for kind, reduction in [("fit", "global"), ("custom", "global"), ("cpu-update", "global"),
                        ("custom", "replica-mean")]:
    loop = make_loop(kind, strategy, build, compile_args, reduction, record_steps=True)
    loop.run(data, 1, 6, lambda *a: True)
    out[kind + " " + reduction] = {{
        "weights": [w.tolist() for w in loop.model.get_weights()],
        "losses": loop.step_losses,
        "examples": loop.replica_examples(),
    }}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def loops() -> dict[str, Any]:
    return run_two_replicas(LOOPS.format(tests=str(TESTS)))


@pytest.mark.parametrize("kind", ["custom global", "cpu-update global"])
def test_the_custom_loops_train_a_structured_model_as_fit_does(loops, kind):
    """Dict inputs and targets, sample weights, two outputs with loss weights: six steps of each
    custom loop end at ``fit``'s weights, from ``fit``'s first loss (``fit`` logs a running
    mean after that), every replica doing its half."""
    fit, loop = loops["fit global"], loops[kind]
    assert loop["losses"][0] == pytest.approx(fit["losses"][0], rel=1e-5)
    for a, b in zip(loop["weights"], fit["weights"], strict=True):
        assert np.allclose(a, b, rtol=1e-5, atol=1e-6)
    assert loop["examples"] == [6 * 32, 6 * 32]


def test_the_replica_mean_bug_still_doubles_the_loss(loops):
    """The forum answer's loop, kept on purpose: each replica's own mean SUM-reduced."""
    fit, bug = loops["fit global"], loops["custom replica-mean"]
    assert bug["losses"][0] == pytest.approx(2 * fit["losses"][0], rel=1e-5)


@pytest.fixture(scope="module")
def out() -> dict[str, Any]:
    return run_two_replicas(SCRIPT.format(tests=str(TESTS)))


@pytest.mark.parametrize("case", ["multi_io", "regularized", "own_step_compiled", "own_loss"])
def test_each_replica_gradient_is_that_of_its_own_mean_loss(out, case):
    """Keras scales its ``compute_loss`` by 1/2 inside a replica context; the meter's
    ``‖g_i‖²`` and ``‖ḡ‖²`` are those of each half's own mean loss (without the correction, a
    quarter). A user's own ``compute_loss`` (which Keras does not scale) is taken as it is."""
    result = out[case]
    assert result["sample"] == pytest.approx(result["by_hand"], rel=1e-4)


@pytest.mark.parametrize("case", ["multi_io", "regularized", "own_step_compiled", "own_loss"])
def test_measured_without_touching_the_model(out, case):
    """Several outputs with loss weights and sample weights, structured inputs and targets,
    regularisation, a custom ``train_step`` compiled with a loss, a ``compute_loss`` of the
    user's: measured; the weights and the compiled metrics' logs are as training left them."""
    result = out[case]
    assert result["value"] is not None and result["value"] > 0
    assert result["steps"] == 8
    assert result["weights_kept"] and result["logs_kept"]


def test_a_custom_train_step_without_a_compiled_loss_is_unsupported(out):
    assert "train_step computes its loss" in out["hidden"]


def test_the_validation_loss_is_the_total_of_a_multi_output_model(out):
    """Dict inputs and targets, sample weights, two outputs with loss weights, a partial last
    batch: one pass through the model's own test step gives ``evaluate``'s total loss."""
    result = out["validation"]
    assert result["pass"]
    logs = result["evaluate"]
    assert result["value"] == pytest.approx(logs["loss"], rel=1e-5)
    # The model's total over every sample: both outputs' weighted losses, loss weights applied.
    assert result["value"] == pytest.approx(result["one_batch"], rel=1e-5)
