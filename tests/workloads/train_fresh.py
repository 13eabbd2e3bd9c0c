"""A fresh training script that trains a zoo setup with an exported recommendation, with nothing
of tuner's: plain Python and Keras, as a user's own script would.

    python train_fresh.py REC.json MODEL_REF DATA_REF [--hypermodel] [--compiled | --loss=NAME]
                                                      [--loss=exported]
    python train_fresh.py --serve

It reads the JSON's global batch, learning rate and optimizer (as Keras serializes it; from the
``recommended`` block where the export has one, else the top-level keys), builds the model on two
replicas (``MirroredStrategy`` over two logical CPUs, or ``keras.distribution.DataParallel`` when
``KERAS_BACKEND=jax``), trains one epoch and prints one line ``REPORT {json}``. An uncompiled
build is compiled with the exported optimizer and the loss the user names (``--loss``; with
``--loss=exported``, the export's ``compile.loss``, deserialized when Keras serialized it); a
compiled build keeps its own compile and takes the exported learning rate (the report names both
optimizer classes).

``--serve`` trains one export after another in the same process, as a notebook would: each line
on stdin is a JSON object ``{"cwd": FOLDER, "argv": [REC.json, MODEL_REF, DATA_REF, FLAGS...]}``,
trained in ``FOLDER`` on a model built anew (after ``keras.backend.clear_session()``), answered
by one line ``REPORT {json}`` or ``FAILED {"error": LINE}``. The test suite uses it so that the
zoo pays Python's start and the framework's import once per backend, not once per setup.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import json
import math
import os
import sys
from pathlib import Path
from typing import Any


def resolve(reference: str) -> Any:
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module), name)


STRATEGY: list[Any] = []
"""The one ``MirroredStrategy`` of this process (TensorFlow's logical CPUs are set once)."""


def two_replicas() -> tuple[Any, int]:
    """The strategy to build the model in (TensorFlow), or ``None`` (JAX, where the distribution
    is set globally, again after each ``clear_session``), and the number of replicas."""
    if os.environ.get("KERAS_BACKEND") == "jax":
        import jax
        import keras

        devices = jax.devices("cpu")[:2]
        keras.distribution.set_distribution(keras.distribution.DataParallel(devices=devices))
        return None, len(devices)
    import tensorflow as tf

    if not STRATEGY:
        cpu = tf.config.list_physical_devices("CPU")[0]
        logical = [tf.config.LogicalDeviceConfiguration()] * 2
        tf.config.set_logical_device_configuration(cpu, logical)
        STRATEGY.append(tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]))
    return STRATEGY[0], STRATEGY[0].num_replicas_in_sync


def is_batched(dataset: Any) -> bool:
    """A ``tf.data`` dataset whose first component has an unknown leading dimension."""
    import tensorflow as tf

    first = tf.nest.flatten(dataset.element_spec)[0]
    return first.shape.rank is not None and first.shape.rank > 0 and first.shape[0] is None


def fit_arguments(load: Any, batch: int) -> dict[str, Any]:
    """What ``fit`` trains on for this ``load_data`` (its training split): arrays (dicts too) at
    the global batch, tf.data datasets rebatched at it, ``PyDataset``\\ s made again at it."""
    if "batch_size" in inspect.signature(load).parameters:  # a PyDataset of its own batch
        train, _ = load(batch_size=batch)
        return {"x": train}
    data = load()
    if len(data) == 4:
        x, y, _, _ = data
        return {"x": x, "y": y, "batch_size": batch}
    if isinstance(data[0], tuple):  # keras.datasets' ((x_train, y_train), (x_test, y_test))
        (x, y), _ = data
        return {"x": x, "y": y, "batch_size": batch}
    train, _ = data
    if is_batched(train):
        train = train.unbatch()
    return {"x": train.batch(batch, drop_remainder=True)}


def scope(strategy: Any) -> Any:
    import contextlib

    return strategy.scope() if strategy is not None else contextlib.nullcontext()


def build_on_strings(model: Any, strategy: Any, data: Any) -> bool:
    """Keras 3.15's ``fit`` under ``MirroredStrategy`` builds the model from the replicas' first
    batches averaged, which fails on strings (``AddN`` of strings); a script that trains a string
    model on two replicas builds it from one local batch first, as tuner's loop does (Keras's
    private ``_symbolic_build``, the call ``fit`` makes). ``True`` if it did."""
    import tensorflow as tf

    if not isinstance(data, tf.data.Dataset):
        return False
    if all(spec.dtype != tf.string for spec in tf.nest.flatten(data.element_spec)):
        return False
    with scope(strategy):
        model._symbolic_build(data_batch=next(iter(data.take(1))))
    model._maybe_symbolic_build = lambda *args, **kwargs: None
    return True


def train(argv: list[str], strategy: Any, replicas: int) -> dict[str, Any]:
    """Train the export ``argv`` names (``REC.json MODEL_REF DATA_REF FLAGS...``) one epoch on
    ``strategy``'s replicas; the report."""
    path, model_ref, data_ref, *flags = argv
    config = json.loads(Path(path).read_text(encoding="utf-8"))
    # The design's ``recommended`` block where the export has one, else the top-level keys.
    recommended = config.get("recommended") or config
    batch = int(recommended["global_batch_size"])
    learning_rate = float(recommended["learning_rate"])
    import keras

    with scope(strategy):
        build = resolve(model_ref)
        if "--hypermodel" in flags:
            import keras_tuner

            hp = keras_tuner.HyperParameters()
            for name, value in (config.get("model_hyperparameters") or {}).items():
                hp.Fixed(name, value)
            if isinstance(build, type):  # a KerasTuner HyperModel class: its instance's build
                build = build().build
            model = build(hp)
        else:
            model = build()
        exported = keras.optimizers.deserialize(copy.deepcopy(recommended["optimizer"]))
        if "--compiled" in flags:  # the build's own compile, at the exported learning rate
            built_class = type(model.optimizer).__name__
            model.optimizer.learning_rate = learning_rate
        else:
            built_class = None
            (loss,) = [flag.removeprefix("--loss=") for flag in flags if flag.startswith("--loss=")]
            if loss == "exported":  # the loss the trials trained with, as the export names it
                loss = config["compile"]["loss"]
                loss = keras.losses.deserialize(loss) if isinstance(loss, dict) else loss
            model.compile(optimizer=exported, loss=loss)
    arguments = fit_arguments(resolve(data_ref), batch)
    local_build = build_on_strings(model, strategy, arguments["x"])
    history = model.fit(epochs=1, verbose=0, **arguments)
    losses = history.history["loss"]
    return {
        "replicas": replicas,
        "batch_size": batch,
        "learning_rate": learning_rate,
        "trained_learning_rate": float(keras.ops.convert_to_numpy(model.optimizer.learning_rate)),
        "exported_optimizer": type(exported).__name__,
        "built_optimizer": built_class,
        "trained_optimizer": type(model.optimizer).__name__,
        "losses": losses,
        "trained_loss": type(model.loss).__name__
        if not isinstance(model.loss, str)
        else model.loss,
        "from_logits": bool(getattr(model.loss, "get_config", dict)().get("from_logits", False)),
        "finite": all(math.isfinite(loss) for loss in losses),
        "built_from_local_batch": local_build,
    }


def serve() -> None:
    """Train each request read from stdin (one JSON line each) and answer it on stdout."""
    import traceback

    import keras

    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        keras.backend.clear_session()
        os.chdir(request["cwd"])
        try:
            answer = "REPORT " + json.dumps(train(request["argv"], *two_replicas()))
        except Exception as exc:  # one setup's failure is its answer, not the server's end
            traceback.print_exc()
            last = f"{type(exc).__name__}: {exc}".strip().splitlines()
            answer = "FAILED " + json.dumps({"error": last[-1] if last else type(exc).__name__})
        print(answer, flush=True)


def main(argv: list[str]) -> None:
    if argv == ["--serve"]:
        serve()
    else:
        print("REPORT " + json.dumps(train(argv, *two_replicas())))


if __name__ == "__main__":
    main(sys.argv[1:])
