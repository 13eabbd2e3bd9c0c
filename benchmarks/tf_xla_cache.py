"""Can TensorFlow's persistent XLA cache save a TensorFlow child's compilation here? (issue 31)

A Keras MLP compiled with ``jit_compile=True`` (Keras's default turns XLA off under a
distribution strategy and on a CPU-only machine), trained for two epochs of 4,096 samples under
``MirroredStrategy`` on 2 logical CPUs (``mirrored``) or on the default device (``single``),
each in a fresh process with ``TF_XLA_FLAGS=--tf_xla_persistent_cache_directory=DIR``, twice:
the second process should read what the first wrote. Prints each run's first-epoch excess over
the second (tracing and compilation), the run's error if any, and the files in DIR.

Usage: python benchmarks/tf_xla_cache.py [mirrored|single] [--runs 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import os, sys, time
import numpy as np
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
import keras
mirrored = sys.argv[1] == "mirrored"
devices = ["/cpu:0", "/cpu:1"]
strategy = tf.distribute.MirroredStrategy(devices) if mirrored else tf.distribute.get_strategy()
rng = np.random.default_rng(0)
x = rng.normal(size=(4096, 32)).astype("float32")
y = (x @ rng.normal(size=(32, 1))).astype("float32")
with strategy.scope():
    model = keras.Sequential(
        [keras.Input((32,)), keras.layers.Dense(256, activation="relu"), keras.layers.Dense(1)]
    )
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse", jit_compile=True)
data = tf.data.Dataset.from_tensor_slices((x, y)).batch(128)
started = time.perf_counter(); model.fit(data, epochs=1, verbose=0)
first = time.perf_counter() - started
started = time.perf_counter(); model.fit(data, epochs=1, verbose=0)
second = time.perf_counter() - started
print(f"jit_compile={model.jit_compile}: first epoch {first:.2f} s, second {second:.2f} s")
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("where", nargs="?", choices=("mirrored", "single"), default="mirrored")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="tf-xla-cache-"))
    env = {
        **os.environ,
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "TF_XLA_FLAGS": f"--tf_xla_persistent_cache_directory={folder}",
    }
    for run in range(1, args.runs + 1):
        done = subprocess.run(
            [sys.executable, "-c", CHILD, args.where], env=env, capture_output=True, text=True
        )
        lines = (done.stdout + done.stderr).splitlines()
        said = [
            line.strip()
            for line in lines
            if any(w in line for w in ("jit_compile=", "Error", "known_issues"))
        ]
        print(f"run {run} ({args.where}): exit {done.returncode}; " + " | ".join(said[-3:]))
        print(f"  {folder}: {sorted(p.name for p in folder.iterdir())}")


if __name__ == "__main__":
    main()
