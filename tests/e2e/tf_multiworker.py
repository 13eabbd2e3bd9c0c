"""One worker of tests/e2e/test_tf_multiworker_canary.py: a tiny Keras 3 model compiled and fit
inside ``tf.distribute.MultiWorkerMirroredStrategy``'s scope, the cluster read from ``TF_CONFIG``.
Prints ``FIT_OK {"losses": [...]}`` when ``fit`` returns; any error is left to raise (its
traceback on stderr, exit 1)."""

from __future__ import annotations

import json
import os

os.environ["KERAS_BACKEND"] = "tensorflow"  # before Keras is imported: it is read once

import keras
import numpy as np
import tensorflow as tf


def main() -> None:
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    rng = np.random.default_rng(0)  # the same data on every worker, as a tutorial has it
    x = rng.normal(size=(64, 4)).astype("float32")
    y = x @ np.ones((4, 1), "float32")
    with strategy.scope():
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
        model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    history = model.fit(data, epochs=2, verbose=0)
    print("FIT_OK " + json.dumps({"losses": history.history["loss"]}), flush=True)


if __name__ == "__main__":
    main()
