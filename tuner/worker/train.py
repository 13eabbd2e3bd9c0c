"""Inside the child process: build, compile and fit one trial, and measure it.

Nothing here touches the study storage; the child hands its result back as plain data. Importing
this module imports TensorFlow: only the child does.
Throughput is measured per epoch from epoch-level callbacks only (batch-level hooks would force a
device sync every step), and the first epoch — tracing and compilation — is left out.
"""

from __future__ import annotations

import math
import resource
import statistics
import time
from collections.abc import Callable
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from tuner.core.devices import DevicePlan
from tuner.core.errors import WorkloadError
from tuner.core.scaling import optimizer_settings
from tuner.worker import hypermodel, optim
from tuner.worker.loops import make_loop
from tuner.worker.meters import Meter, UtilizationSampler, peak_memory_per_device, split_tracing
from tuner.worker.noise import NoiseMeter, auto_noise_steps
from tuner.worker.strategy import build_strategy
from tuner.workloads import resolve

Emit = Callable[[dict[str, Any]], None]


def _call(reference: str) -> Any:
    """Call the user's ``module:function``; anything it raises is a :class:`WorkloadError`."""
    function = resolve(reference)
    try:
        return function()
    except Exception as exc:
        raise WorkloadError(f"{reference} raised {type(exc).__name__}: {exc}") from exc


def load_arrays(data_ref: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Call the workload's data function and check what it returned."""
    data = _call(data_ref)
    if not isinstance(data, tuple | list) or len(data) != 4:
        raise WorkloadError(f"{data_ref} must return (x_train, y_train, x_val, y_val)")
    arrays = tuple(np.asarray(item) for item in data)
    names = ("x_train", "y_train", "x_val", "y_val")
    for name, array in zip(names, arrays, strict=True):
        if array.ndim == 0 or array.shape[0] == 0:
            raise WorkloadError(f"{data_ref}: {name} is empty")
    if arrays[0].shape[0] != arrays[1].shape[0] or arrays[2].shape[0] != arrays[3].shape[0]:
        raise WorkloadError(f"{data_ref}: x and y have different numbers of samples")
    return arrays  # type: ignore[return-value]


def build_model(model_ref: str, values: dict[str, Any] | None = None) -> Any:
    """Build the workload's model (a hypermodel at ``values``) and check it is a Keras model."""
    return hypermodel.build(model_ref, values)


def make_optimizer(name: str, learning_rate: float) -> Any:
    """A Keras optimizer by name (``adam``, ``sgd``, ...) at ``learning_rate``."""
    try:
        return keras.optimizers.get(
            {"class_name": name, "config": {"learning_rate": learning_rate}}
        )
    except (ValueError, TypeError) as exc:
        raise WorkloadError(f"unknown Keras optimizer {name!r}: {exc}") from exc


def check_loss(name: str) -> None:
    """Raise :class:`WorkloadError` unless ``name`` is a Keras loss."""
    try:
        keras.losses.get(name)
    except (ValueError, TypeError) as exc:
        raise WorkloadError(f"unknown Keras loss {name!r}") from exc


def inspect_workload(request: dict[str, Any]) -> dict[str, Any]:
    """Load the data, build and compile the model once on one CPU, and evaluate a few samples.

    Catches what would otherwise fail every trial: imports, shapes, loss and optimizer names.
    """
    workload = request["workload"]
    x_train, y_train, x_val, y_val = load_arrays(workload["data"])
    found = hypermodel.discover(workload["model"])
    hypermodel.check_fit(workload["model"], x_train[:8], y_train[:8])
    values = None
    if found is not None:
        from tuner.core.hyperparams import check, defaults

        check(found["space"])
        values = defaults(found["space"])
    model = build_model(workload["model"], values)
    compiled = hypermodel.compile_args(model, 1e-3)
    if compiled is None:
        check_loss(workload["loss"])
        optimizer = make_optimizer(workload["optimizer"], 1e-3)
        model.compile(optimizer=optimizer, loss=workload["loss"])
    else:
        optimizer = compiled["optimizer"]
    if "sqrt-adam" in request.get("lr_rules", []):
        try:  # the optimizer must have Adam's moments, at every ratio of the grid
            optimizer_settings("sqrt-adam", float(request["max_ratio"]), optimizer.get_config())
        except ValueError as exc:
            where = (
                f"{workload['model']} compiles a" if compiled is not None else "the optimizer is"
            )
            raise WorkloadError(f"{where} {type(optimizer).__name__}: {exc}") from None
    if compiled is not None and request.get("loop", "fit") != "fit":
        raise WorkloadError(
            f"{workload['model']} compiles its model; a compiled model runs with loop = fit "
            "(the custom loops take the loss from the spec)"
        )
    try:
        model.evaluate(x_train[:8], y_train[:8], verbose=0)
        model.evaluate(x_val[:8], y_val[:8], verbose=0)
    except Exception as exc:  # any failure here is a model/data mismatch
        raise WorkloadError(
            f"model {workload['model']} does not fit data {workload['data']} "
            f"(x {x_train.shape[1:]}, y {y_train.shape[1:]}): {type(exc).__name__}: "
            f"{_first_line(str(exc))}"
        ) from exc
    return {
        "status": "ok",
        "n_train": int(x_train.shape[0]),
        "n_val": int(x_val.shape[0]),
        "input_shape": list(x_train.shape[1:]),
        "parameters": int(model.count_params()),
        "versions": versions(),
        "hypermodel": found,
        "compiled_by_build": compiled is not None,
    }


def versions() -> dict[str, str]:
    """TensorFlow and Keras versions as the child sees them."""
    return {"tensorflow": tf.__version__, "keras": keras.__version__}


def run_trial(request: dict[str, Any], emit: Emit) -> dict[str, Any]:
    """Train one trial (``mode`` ``trial``) or one validation run (``mode`` ``validate``).

    A trial returns status ``ok`` or ``diverged`` with its measurements; a validation run also
    returns per-step losses, per-replica example counts and every variable's replica copies'
    largest difference. Raises on failure; the caller classifies the exception.
    """
    timings: dict[str, float] = {}
    plan = DevicePlan.from_dict(request["plan"])
    workload = request["workload"]
    batch = int(request["global_batch_size"])
    learning_rate = float(request["learning_rate"])
    epochs = int(request["epochs"])
    seed = int(request["seed"])
    validating = request["mode"] == "validate"
    probing = request["mode"] == "probe"

    mark = time.perf_counter()
    strategy = build_strategy(plan)
    timings["device_init_s"] = time.perf_counter() - mark

    mark = time.perf_counter()
    x_train, y_train, x_val, y_val = load_arrays(workload["data"])
    if batch > x_train.shape[0]:
        raise WorkloadError(
            f"global batch {batch} is larger than the training set ({x_train.shape[0]} samples)"
        )
    steps = x_train.shape[0] // batch
    if request.get("steps_per_epoch"):
        steps = min(steps, int(request["steps_per_epoch"]))
    values = request.get("model_hyperparameters")
    initial = _initial_weights(workload["model"], seed, values)
    from_build: dict[str, Any] = {}

    def build() -> Any:
        model = build_model(workload["model"], values)
        model.set_weights(initial)
        args = hypermodel.compile_args(model, learning_rate)
        if args is not None:  # the user's build compiled it: keep its loss, metrics, optimizer
            from_build["args"] = args
        return model

    rule = request.get("rule")
    if rule and rule["name"] == "linear-warmup" and not rule.get("warmup_steps"):
        rule = {**rule, "warmup_steps": max(1, round(rule["warmup_epochs"] * steps))}

    def compile_args() -> dict[str, Any]:
        if "args" in from_build:
            args = dict(from_build["args"])
        else:
            args = {
                "optimizer": make_optimizer(workload["optimizer"], learning_rate),
                "loss": workload["loss"],
            }
        args["optimizer"] = optim.apply_rule(args["optimizer"], rule)
        return args

    loop = make_loop(
        request.get("loop", "fit"),
        strategy,
        build,
        compile_args,
        loss_name=workload["loss"],
        global_batch=batch,
        reduction=request.get("loss_reduction", "global"),
        record_steps=validating,
    )
    train = _dataset(x_train, y_train, batch, shuffle_seed=seed)
    timings["build_s"] = time.perf_counter() - mark

    meter = Meter(emit, samples_per_epoch=steps * batch, epochs=epochs)
    sampler = UtilizationSampler(plan) if validating else None
    noise = _noise_meter(request, plan, strategy, loop, x_train, y_train, from_build, steps)

    def on_epoch(epoch: int, loss: float, seconds: float) -> bool:
        going_on = meter(epoch, loss, seconds)  # the epoch's time is taken before measuring
        if going_on and noise is not None:
            noise.measure()
        return going_on

    mark = time.perf_counter()
    loop.run(train, epochs, steps if request.get("steps_per_epoch") else None, on_epoch)
    timings["fit_s"] = time.perf_counter() - mark
    timings["noise_scale_s"] = noise.seconds if noise is not None else 0.0
    timings["fit_s"] -= timings["noise_scale_s"]  # measured on separate steps: not training
    timings.update(split_tracing(meter.epoch_seconds, timings["fit_s"]))

    result: dict[str, Any] = {
        "devices": loop.devices,
        "num_replicas": plan.num_replicas,
        "steps_per_epoch": steps,
        "epoch_losses": meter.losses,
        "epoch_throughputs": meter.throughputs,
        "optimizer_learning_rate": loop.learning_rate(),
        "model_parameters": int(loop.model.count_params()),
        "model_layers": hypermodel.layer_summary(loop.model),
        "optimizer": optim.describe(loop.model.optimizer, "args" in from_build, rule),
        "versions": versions(),
        "timings": timings,
    }
    if noise is not None:
        if noise.stopped:
            result["noise_scale_note"] = noise.stopped
        result.update(
            gradient_noise_scale=noise.scale.value,
            critical_batch_size=noise.scale.value,
            gradient_noise_scale_per_epoch=noise.scale.history,
            noise_scale_steps=noise.measured_steps,
        )
    elif request.get("noise_scale") and request["mode"] == "trial":
        result["noise_scale_note"] = (
            "the gradient noise scale needs at least 2 replicas"
            if plan.num_replicas < 2
            else "the gradient noise scale is measured with loop = fit or custom"
        )
    if probing:
        peaks = [p for p in peak_memory_per_device(plan) if p is not None]
        result.update(status="ok", probe=True, peak_memory_bytes=max(peaks) if peaks else None)
        return result
    if validating:
        result.update(
            status="ok",
            step_losses=loop.step_losses,
            replica_examples=loop.replica_examples(),
            steps=len(loop.step_losses),
            variable_devices=loop.variable_devices(),
            peak_memory_per_device=peak_memory_per_device(plan),
            utilization_per_device=sampler.stop() if sampler else None,
            **_weight_sync(loop.variable_copies()),
        )
        return result
    if meter.diverged_at is not None:
        result.update(
            status="diverged",
            error=f"training loss became {meter.losses[-1]} in epoch {meter.diverged_at}",
        )
        return result

    mark = time.perf_counter()
    model = loop.model
    # Every validation sample counts (no drop_remainder), so trials at different batch sizes
    # report the loss over the same samples.
    val = _dataset(x_val, y_val, batch, shuffle_seed=None, drop_remainder=False)
    final_loss = float(model.evaluate(val, verbose=0, return_dict=True)["loss"])
    timings["evaluate_s"] = time.perf_counter() - mark
    steady = meter.throughputs[1:] or meter.throughputs
    median = statistics.median(steady)
    peaks = [p for p in peak_memory_per_device(plan) if p is not None]
    result.update(
        status="ok" if math.isfinite(final_loss) else "diverged",
        final_loss=final_loss,
        train_loss=meter.losses[-1],
        throughput=median,
        throughput_spread=(max(steady) - min(steady)) / median if median > 0 else 0.0,
        peak_memory_bytes=max(peaks) if peaks else None,
        peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    )
    if result["status"] == "diverged":
        result["error"] = f"validation loss is {final_loss}"
    return result


def _noise_meter(
    request: dict[str, Any],
    plan: DevicePlan,
    strategy: Any,
    loop: Any,
    x: np.ndarray,
    y: np.ndarray,
    from_build: dict[str, Any],
    epoch_steps: int,
) -> NoiseMeter | None:
    """The gradient-noise-scale meter of a trial with 2+ replicas on a ``MirroredStrategy``."""
    if request["mode"] != "trial" or not request.get("noise_scale") or plan.num_replicas < 2:
        return None
    steps = int(request.get("noise_scale_steps") or auto_noise_steps(epoch_steps))
    if request.get("loop", "fit") not in ("fit", "custom"):
        return None
    batch = int(request["global_batch_size"])
    loss = from_build["args"]["loss"] if "args" in from_build else request["workload"]["loss"]
    # Shuffled afresh on every pass (independent batches matter more than anything here), with
    # a buffer of 16 batches rather than the whole set: less to fill before the first step.
    dataset = (
        tf.data.Dataset.from_tensor_slices((x, y))
        .shuffle(min(len(x), 16 * batch), seed=int(request["seed"]) + 1)
        .batch(batch, drop_remainder=True)
        .prefetch(tf.data.AUTOTUNE)
    )
    return NoiseMeter(strategy, loop.model, dataset, loss, batch, steps)


def _initial_weights(
    model_ref: str, seed: int, values: dict[str, Any] | None = None
) -> list[np.ndarray]:
    """The model's initial weights from ``seed``, built once outside any strategy, so that every
    run — one device or many — starts from the same numbers."""
    keras.utils.set_random_seed(seed)
    with tf.device("/cpu:0"):
        weights: list[np.ndarray] = build_model(model_ref, values).get_weights()
    keras.utils.set_random_seed(seed)
    return weights


def _weight_sync(copies: list[list[np.ndarray]]) -> dict[str, Any]:
    """The largest absolute difference between any variable's replica copies and its first."""
    worst = 0.0
    for values in copies:
        for other in values[1:]:
            worst = max(worst, float(np.max(np.abs(other - values[0]), initial=0.0)))
    return {
        "variables_compared": len(copies),
        "copies_per_variable": max((len(v) for v in copies), default=0),
        "weight_max_abs_diff": worst,
    }


def _dataset(
    x: np.ndarray,
    y: np.ndarray,
    batch: int,
    shuffle_seed: int | None,
    drop_remainder: bool = True,
) -> Any:
    data = tf.data.Dataset.from_tensor_slices((x, y))
    if shuffle_seed is not None:
        data = data.shuffle(x.shape[0], seed=shuffle_seed, reshuffle_each_iteration=True)
    return data.batch(batch, drop_remainder=drop_remainder).prefetch(tf.data.AUTOTUNE)


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0][:300] if lines else ""
