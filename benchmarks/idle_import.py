"""Does the warm child's import at idle priority cost a timed window, and what does it save?

``window``: one Keras ``fit`` under ``MirroredStrategy`` on 2 logical CPUs (a 256-256 MLP at batch
128), 2-epoch windows interleaved four ways: nothing beside it, or a fresh process importing
TensorFlow and Keras in a loop, in a session of its own as tuner starts a spare — ``idle``: at
``SCHED_IDLE`` with its session's autogroup at nice 19 (what the warm child does now);
``idle-class``: at ``SCHED_IDLE`` only (abcb59d to 09d3e75: where the kernel shares time between
sessions first, the class ranks threads only within the spare's own session); ``normal``. Each
round runs them in one order and the next round in the reverse order; the importer is killed when
the window ends, so no import outlives its window.

``quick``: the quickstart's ``tuner search --quick`` in a fresh folder with
``TUNER_WARM_CHILD=late`` (the spare after the running trial's windows, as before) and with the
default (idle import from the start), interleaved: wall, each child's ``import_s`` (inside its
wall) and ``import_hidden_s``, and each configuration's throughput.

Usage: python benchmarks/idle_import.py window [--rounds 6]
       python benchmarks/idle_import.py quick [--reps 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

IMPORT = (
    "import contextlib, os, sys\n"
    "if sys.argv[1] != 'normal': os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))\n"
    "if sys.argv[1] == 'idle':\n"
    "    with contextlib.suppress(OSError), open('/proc/self/autogroup', 'w') as group:\n"
    "        group.write('19')\n"
    "import tensorflow, keras\n"
)
SAMPLES = 16384
MODES = ("none", "idle", "idle-class", "normal")


def _importer(mode: str, stop: threading.Event) -> None:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    while not stop.is_set():
        proc = subprocess.Popen(
            [sys.executable, "-c", IMPORT, mode], env=env, start_new_session=True
        )
        while proc.poll() is None and not stop.is_set():
            time.sleep(0.02)
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def window(rounds: int) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras
    import numpy as np
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    rng = np.random.default_rng(0)
    x = rng.normal(size=(SAMPLES, 32)).astype("float32")
    y = (x @ rng.normal(size=(32, 1))).astype("float32")
    with strategy.scope():
        model = keras.Sequential(
            [
                keras.Input((32,)),
                keras.layers.Dense(256, activation="relu"),
                keras.layers.Dense(256, activation="relu"),
                keras.layers.Dense(1),
            ]
        )
        model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse")
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(128).prefetch(2)
    model.fit(data, epochs=1, verbose=0)  # tracing, outside every window
    rates: dict[str, list[float]] = {mode: [] for mode in MODES}
    for index in range(rounds):
        for mode in MODES if index % 2 == 0 else MODES[::-1]:
            stop = threading.Event()
            beside = None
            if mode != "none":
                beside = threading.Thread(target=_importer, args=(mode, stop))
                beside.start()
                time.sleep(0.5)
            started = time.perf_counter()
            model.fit(data, epochs=2, verbose=0)
            rate = 2 * SAMPLES / (time.perf_counter() - started)
            stop.set()
            if beside is not None:
                beside.join()
            time.sleep(1.0)
            rates[mode].append(rate)
            print(f"round {index} {mode:10s} {rate:8,.0f} samples/s", flush=True)
    medians = {mode: statistics.median(values) for mode, values in rates.items()}
    for mode in MODES:
        print(
            f"{mode:10s} median {medians[mode]:8,.0f} samples/s "
            f"(min {min(rates[mode]):,.0f}, max {max(rates[mode]):,.0f}); "
            f"vs nothing {medians[mode] / medians['none']:.3f}"
        )


def _quick_once(switch: str) -> tuple[float, dict[str, Any]]:
    import optuna

    folder = Path(tempfile.mkdtemp(prefix=f"idle-import-{switch}-"))
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "tuner", "search", "--quick"],
        cwd=folder,
        env={**os.environ, "TUNER_WARM_CHILD": switch},
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(done.stderr[-2000:])
    storage = f"sqlite:///{folder}/studies/tuner.db"
    study = optuna.load_study(study_name=optuna.get_all_study_names(storage)[0], storage=storage)
    visible, hidden, rates = [], [], {}
    for trial in study.get_trials(deepcopy=False):
        timings = trial.user_attrs.get("timings", {})
        if "import_s" in timings:
            visible.append(round(timings["import_s"], 2))
            hidden.append(round(timings.get("import_hidden_s", 0.0), 2))
        if "run_throughput" in trial.user_attrs and "same_as" not in trial.user_attrs:
            key = f"{trial.params['global_batch_size']}/{trial.params.get('lr_rule')}"
            rates[key] = trial.user_attrs["run_throughput"]
    return wall, {"import_s": visible, "import_hidden_s": hidden, "rates": rates}


def quick(reps: int) -> None:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    walls: dict[str, list[float]] = {"late": [], "1": []}
    for index in range(reps):
        for switch in ("late", "1") if index % 2 == 0 else ("1", "late"):
            wall, found = _quick_once(switch)
            walls[switch].append(wall)
            name = "late" if switch == "late" else "idle"
            print(f"rep {index} {name}: wall {wall:.1f} s, {found}", flush=True)
    late, idle = statistics.median(walls["late"]), statistics.median(walls["1"])
    print(f"median wall: late {late:.1f} s, idle {idle:.1f} s ({idle / late - 1:+.0%})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("window").add_argument("--rounds", type=int, default=6)
    sub.add_parser("quick").add_argument("--reps", type=int, default=2)
    args = parser.parse_args()
    if args.what == "window":
        window(args.rounds)
    else:
        quick(args.reps)


if __name__ == "__main__":
    main()
