"""An independent throughput measurement: plain Keras, no tuner code in the training path.

Usage: python benchmarks/plain_keras.py GLOBAL_BATCH REPLICAS EPOCHS [--cached]
Prints {"throughput": samples/s}: one `fit(dataset, epochs=EPOCHS)` call, as a user runs it; each
epoch is timed by its own minimal callback and the first (tracing) is left out. With --cached the
batches are built once and cached in memory, so no per-step input work remains (the input-pipeline
check).
"""

import json
import os
import statistics
import sys
import time

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
import keras
import numpy as np
import tensorflow as tf

batch, replicas, epochs = (int(a) for a in sys.argv[1:4])
cached = "--cached" in sys.argv
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(replicas)]
)
strategy = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(replicas)])

rng = np.random.default_rng(1)
x = rng.random((65_536, 10), dtype=np.float32)
y = rng.random((65_536, 1), dtype=np.float32)
data = tf.data.Dataset.from_tensor_slices((x, y))
if cached:
    data = data.batch(batch, drop_remainder=True).cache()
else:
    data = data.shuffle(65_536, seed=0).batch(batch, drop_remainder=True)
data = data.prefetch(tf.data.AUTOTUNE)
steps = 65_536 // batch

stamps: list[float] = []
clock = keras.callbacks.LambdaCallback(
    on_epoch_begin=lambda epoch, logs: stamps.append(time.perf_counter()),
    on_epoch_end=lambda epoch, logs: stamps.append(time.perf_counter()),
)
keras.utils.set_random_seed(0)
with strategy.scope():
    model = keras.Sequential(
        [
            keras.Input(shape=(10,)),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dense(1),
        ]
    )
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse")
model.fit(data, epochs=epochs, verbose=0, callbacks=[clock])
rates = [steps * batch / (stamps[i + 1] - stamps[i]) for i in range(2, len(stamps), 2)]
print(json.dumps({"throughput": statistics.median(rates)}))
