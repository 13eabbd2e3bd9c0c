"""Which ``add_loss`` terms Keras scales by ``1 / replicas`` twice, and what tuner does about it
(:mod:`tuner.worker.backends.tensorflow._additional_losses`): the pure decision, on the values
a term takes in a replica's step and outside the strategy; and on two replicas (a child
process), the keras-io recipe's endpoint (with its metric), the same with a regularizer, and a
regularizer alone. The guide's endpoint is the zoo's ``add_loss_endpoint`` setup."""

from __future__ import annotations

import pytest
from tf_child import run_two_replicas

pytest.importorskip("tensorflow")
pytest.importorskip("keras")

from tuner.worker.backends.tensorflow._additional_losses import (
    decide,
    term_kinds,
)


def test_a_term_half_as_large_on_two_replicas_was_scaled_by_its_loss_object() -> None:
    kinds = term_kinds(
        inside=[0.3536, 0.01, 0.0, 0.5], outside=[0.7072, 0.01, 0.0, 0.7], replicas=2
    )
    assert kinds == ["scaled", "plain", "zero", "unknown"]


def test_only_scaled_terms_are_multiplied_back() -> None:
    rescale, note = decide(["scaled", "zero"], replicas=4)
    assert rescale
    assert note is not None and "multiplied by 4" in note


@pytest.mark.parametrize("kinds", [[], ["plain"], ["plain", "zero"]])
def test_terms_keras_scales_once_are_left_alone_unsaid(kinds: list[str]) -> None:
    assert decide(kinds, replicas=2) == (False, None)


def test_a_mix_is_not_corrected_but_said() -> None:
    rescale, note = decide(["scaled", "plain"], replicas=2)
    assert not rescale
    assert note is not None and "1 of 2 additional loss terms" in note and "not corrected" in note


TWO_REPLICAS = """
import json, sys
import numpy as np, tensorflow as tf, keras
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from tuner.worker.backends.tensorflow._additional_losses import correct_additional_losses


class LogisticEndpoint(keras.layers.Layer):  # keras-io's endpoint layer recipe
    def __init__(self, name=None):
        super().__init__(name=name)
        self.loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)
        self.accuracy_metric = keras.metrics.BinaryAccuracy(name="accuracy")

    def call(self, logits, targets=None, sample_weight=None):
        if targets is not None:
            self.add_loss(self.loss_fn(targets, logits, sample_weight))
            self.accuracy_metric.update_state(targets, logits, sample_weight)
        return keras.ops.softmax(logits)


def endpoint(regularizer=None):
    inputs = keras.Input(shape=(3,), name="inputs")
    targets = keras.Input(shape=(10,), name="targets")
    logits = keras.layers.Dense(10, kernel_regularizer=regularizer)(inputs)
    predictions = LogisticEndpoint(name="predictions")(logits, targets)
    model = keras.Model(inputs=[inputs, targets], outputs=predictions)
    model.compile(optimizer="adam")
    return model


def regularized():
    dense = keras.layers.Dense(1, kernel_regularizer="l2")
    model = keras.Sequential([keras.Input(shape=(3,)), dense])
    model.compile(optimizer="adam", loss="mse")
    return model


rng = np.random.default_rng(0)
data = {"inputs": rng.random((128, 3), dtype=np.float32),
        "targets": rng.random((128, 10), dtype=np.float32)}
cases = {
    "endpoint": (endpoint, (data,)),
    "endpoint_l2": (lambda: endpoint("l2"), (data,)),
    "l2": (regularized, (data["inputs"], data["targets"][:, :1])),
}
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
out = {}
for name, (build, fit_args) in cases.items():
    keras.utils.set_random_seed(0)
    one = build()
    one_loss = one.fit(*fit_args, batch_size=64, epochs=1, verbose=0).history["loss"][-1]
    keras.utils.set_random_seed(0)
    with strategy.scope():
        two = build()
    note = correct_additional_losses(two, strategy, tuple(a for a in fit_args))
    two_loss = two.fit(*fit_args, batch_size=64, epochs=1, verbose=0).history["loss"][-1]
    out[name] = {"note": note, "ratio": two_loss / one_loss}
print(json.dumps(out))
"""


@pytest.mark.slow
def test_on_two_replicas_only_a_loss_objects_terms_are_corrected() -> None:
    out = run_two_replicas(TWO_REPLICAS)
    # the recipe's endpoint, a metric updated in its call: corrected, one device's loss
    assert "multiplied by 2" in out["endpoint"]["note"]
    assert out["endpoint"]["ratio"] == pytest.approx(1.0, rel=1e-5)
    # with a regularizer beside it: said, and about half of one device's (as Keras trains it)
    assert "not corrected" in out["endpoint_l2"]["note"]
    assert 0.45 < out["endpoint_l2"]["ratio"] < 0.6
    # a regularizer alone, which Keras scales once: nothing done, nothing said
    assert out["l2"]["note"] is None
    assert out["l2"]["ratio"] == pytest.approx(1.0, rel=1e-5)
