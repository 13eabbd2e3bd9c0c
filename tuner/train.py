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
import threading
import time
from collections.abc import Callable
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from tuner import hypermodel
from tuner.devices import DevicePlan, build_strategy
from tuner.errors import WorkloadError
from tuner.loops import make_loop
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
        from tuner.hyperparams import check, defaults

        check(found["space"])
        values = defaults(found["space"])
    model = build_model(workload["model"], values)
    compiled = hypermodel.compile_args(model, 1e-3)
    if compiled is None:
        check_loss(workload["loss"])
        model.compile(optimizer=make_optimizer(workload["optimizer"], 1e-3), loss=workload["loss"])
    elif request.get("loop", "fit") != "fit":
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

    def compile_args() -> dict[str, Any]:
        if "args" in from_build:
            return dict(from_build["args"])
        return {
            "optimizer": make_optimizer(workload["optimizer"], learning_rate),
            "loss": workload["loss"],
        }

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

    meter = _Meter(emit, samples_per_epoch=steps * batch, epochs=epochs)
    sampler = _UtilizationSampler(plan) if validating else None
    mark = time.perf_counter()
    loop.run(train, epochs, steps if request.get("steps_per_epoch") else None, meter)
    timings["fit_s"] = time.perf_counter() - mark
    timings.update(_split_tracing(meter.epoch_seconds, timings["fit_s"]))

    result: dict[str, Any] = {
        "devices": loop.devices,
        "num_replicas": plan.num_replicas,
        "steps_per_epoch": steps,
        "epoch_losses": meter.losses,
        "epoch_throughputs": meter.throughputs,
        "optimizer_learning_rate": loop.learning_rate(),
        "model_parameters": int(loop.model.count_params()),
        "optimizer": (
            hypermodel.describe_optimizer(from_build["args"])
            if "args" in from_build
            else {
                "class": workload["optimizer"],
                "learning_rate": learning_rate,
                "from_build": False,
            }
        ),
        "versions": versions(),
        "timings": timings,
    }
    if probing:
        peaks = [p for p in _peak_memory_per_device(plan) if p is not None]
        result.update(status="ok", probe=True, peak_memory_bytes=max(peaks) if peaks else None)
        return result
    if validating:
        result.update(
            status="ok",
            step_losses=loop.step_losses,
            replica_examples=loop.replica_examples(),
            steps=len(loop.step_losses),
            variable_devices=loop.variable_devices(),
            peak_memory_per_device=_peak_memory_per_device(plan),
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
    peaks = [p for p in _peak_memory_per_device(plan) if p is not None]
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


def _split_tracing(epoch_seconds: list[float], fit_s: float) -> dict[str, float]:
    """Split fit time into tracing (the first epoch's excess over a steady epoch) and training."""
    if not epoch_seconds:
        return {"tracing_s": 0.0, "training_s": fit_s}
    steady = statistics.median(epoch_seconds[1:]) if len(epoch_seconds) > 1 else epoch_seconds[0]
    tracing = max(0.0, epoch_seconds[0] - steady)
    return {"tracing_s": tracing, "training_s": fit_s - tracing}


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


def _peak_memory_per_device(plan: DevicePlan) -> list[int | None]:
    """Peak bytes per replica device (GPUs only; ``None`` where TensorFlow cannot tell)."""
    if plan.kind != "gpu":
        return [None] * plan.num_replicas
    peaks: list[int | None] = []
    for i in range(plan.num_replicas):
        try:
            peaks.append(int(tf.config.experimental.get_memory_info(f"GPU:{i}")["peak"]))
        except (ValueError, RuntimeError):
            peaks.append(None)
    return peaks


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0][:300] if lines else ""


class _Meter:
    """Times epochs, records their losses and throughput, reports progress, stops on NaN."""

    def __init__(self, emit: Emit, samples_per_epoch: int, epochs: int) -> None:
        self._emit = emit
        self._samples = samples_per_epoch
        self._epochs = epochs
        self.epoch_seconds: list[float] = []
        self.throughputs: list[float] = []
        self.losses: list[float] = []
        self.diverged_at: int | None = None

    def __call__(self, epoch: int, loss: float, seconds: float) -> bool:
        self.epoch_seconds.append(seconds)
        self.throughputs.append(self._samples / seconds if seconds > 0 else 0.0)
        self.losses.append(loss)
        self._emit(
            {
                "event": "epoch",
                "epoch": epoch + 1,
                "epochs": self._epochs,
                "loss": loss,
                "throughput": self.throughputs[-1],
            }
        )
        if not math.isfinite(loss):
            self.diverged_at = epoch + 1
            return False
        return True


class _UtilizationSampler:
    """Samples each selected GPU's utilisation through NVML (``nvidia-ml-py``), if available."""

    def __init__(self, plan: DevicePlan) -> None:
        self._samples: list[list[int]] = [[] for _ in plan.gpu_indices]
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if plan.kind != "gpu":
            return
        try:
            import pynvml  # type: ignore[import-not-found]

            pynvml.nvmlInit()
            handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in plan.gpu_indices]
        except Exception:  # no NVML here: utilisation is simply not reported
            return

        def sample() -> None:
            while not self._stop.wait(0.1):
                for i, handle in enumerate(handles):
                    self._samples[i].append(int(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu))

        self._thread = threading.Thread(target=sample, name="tuner-nvml", daemon=True)
        self._thread.start()

    def stop(self) -> list[float] | None:
        """Mean utilisation (percent) per GPU while training, or ``None`` without NVML."""
        if self._thread is None:
            return None
        self._stop.set()
        self._thread.join()
        return [sum(s) / len(s) if s else 0.0 for s in self._samples]
