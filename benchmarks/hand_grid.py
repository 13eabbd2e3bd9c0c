"""The hand-written grid: what a user writes without tuner, plainly, in one process.

Usage: python benchmarks/hand_grid.py [--replicas 2] [--epochs 3] [--base-batch 64]
       [--multipliers 1,2] [--rules none,linear,sqrt] [--base-lr 1e-3] [--samples 65536]
Defaults are the quickstart's (`tuner search` with the built-in workload). Its own model code (10 ->
64 -> 32 -> 1, MSE, Adam) and data (65,536 training and 8,192 validation samples of a smooth
function of 10 features; --samples N: an epoch is the first N of them), one MirroredStrategy over
logical CPU devices, and a loop over (global batch, learning-rate rule) that builds, compiles and
fits a fresh model, then evaluates it. Each epoch is timed by a minimal callback; a configuration's
throughput is the median of its epochs after the first (tracing, as tuner leaves it out). Prints one
JSON line per configuration, then {"wall_s": ...}.
"""

import argparse
import json
import math
import os
import statistics
import time

started = time.perf_counter()
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--replicas", type=int, default=2)
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--base-batch", type=int, default=64)
parser.add_argument("--multipliers", default="1,2")
parser.add_argument("--rules", default="none,linear,sqrt")
parser.add_argument("--base-lr", type=float, default=1e-3)
parser.add_argument("--samples", type=int, default=65_536)
args = parser.parse_args()

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(args.replicas)]
)
strategy = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(args.replicas)])

rng = np.random.default_rng(0)
w = rng.normal(size=(10,)).astype(np.float32)
x = rng.random((65_536 + 8_192, 10), dtype=np.float32)
y = (np.sin(3.0 * x @ w) + 0.5 * (x[:, 0] - x[:, 1]) ** 2)[:, None].astype(np.float32)
y += 0.05 * rng.normal(size=y.shape).astype(np.float32)
x_train, y_train, x_val, y_val = x[: args.samples], y[: args.samples], x[65_536:], y[65_536:]

SCALE = {"none": lambda k: 1.0, "linear": lambda k: k, "sqrt": math.sqrt}

for multiplier in (int(m) for m in args.multipliers.split(",")):
    batch = args.base_batch * multiplier
    for rule in args.rules.split(","):
        lr = args.base_lr * SCALE[rule](multiplier)
        train = (
            tf.data.Dataset.from_tensor_slices((x_train, y_train))
            .shuffle(args.samples, seed=0)
            .batch(batch, drop_remainder=True)
            .prefetch(tf.data.AUTOTUNE)
        )
        val = tf.data.Dataset.from_tensor_slices((x_val, y_val)).batch(batch)
        stamps: list[float] = []
        clock = keras.callbacks.LambdaCallback(
            on_epoch_begin=lambda epoch, logs, stamps=stamps: stamps.append(time.perf_counter()),
            on_epoch_end=lambda epoch, logs, stamps=stamps: stamps.append(time.perf_counter()),
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
            model.compile(optimizer=keras.optimizers.Adam(lr), loss="mse")
        model.fit(train, epochs=args.epochs, verbose=0, callbacks=[clock])
        val_loss = model.evaluate(val, verbose=0)
        samples = args.samples // batch * batch
        rates = [samples / (stamps[i + 1] - stamps[i]) for i in range(2, len(stamps), 2)]
        line = {"batch": batch, "rule": rule, "lr": lr, "throughput": statistics.median(rates)}
        print(json.dumps({**line, "val_loss": val_loss}), flush=True)
print(json.dumps({"wall_s": time.perf_counter() - started}))
