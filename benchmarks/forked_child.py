"""What a trial child's framework import costs, against a child forked after it (issue 42).

Usage: python benchmarks/forked_child.py cold      # import TensorFlow and Keras, then train
       python benchmarks/forked_child.py fork      # import once, then train in 2 forked children

Each training is what a small trial does: 2 logical CPU devices under ``MirroredStrategy``, a
10 -> 64 -> 1 model, 2 epochs of 8,192 samples. The parent never starts TensorFlow's runtime (it
configures no device and runs no op), so each fork configures its own devices as a fresh process
would. Prints the CPU seconds of each: the gap is the import a fork server would pay once per
search instead of once per child.
"""

from __future__ import annotations

import os
import resource
import sys
import time

started = time.perf_counter()
import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

IMPORT_S = time.perf_counter() - started


def train() -> float:
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        layers = [keras.Input((10,)), keras.layers.Dense(64, activation="relu")]
        model = keras.Sequential([*layers, keras.layers.Dense(1)])
        model.compile("adam", "mse")
    x = np.random.default_rng(0).random((8192, 10), dtype=np.float32)
    history = model.fit(x, x.sum(1, keepdims=True), batch_size=128, epochs=2, verbose=0)
    return float(history.history["loss"][-1])


def cpu_s(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    if sys.argv[1:] == ["cold"]:
        loss = train()
        spent = cpu_s(resource.RUSAGE_SELF)
        print(f"cold: import {IMPORT_S:.2f} s; loss {loss:.4f}; {spent:.2f} CPU-s")
        return
    threads = len(os.listdir("/proc/self/task"))
    print(f"parent: import {IMPORT_S:.2f} s, {threads} threads (OpenBLAS's pool handles fork)")
    for i in range(2):
        before = cpu_s(resource.RUSAGE_CHILDREN)
        pid = os.fork()
        if pid == 0:
            print(f"  fork {i}: loss {train():.4f}", flush=True)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        spent = cpu_s(resource.RUSAGE_CHILDREN) - before
        print(f"  fork {i}: exit status {status}, {spent:.2f} CPU-s")


if __name__ == "__main__":
    main()
