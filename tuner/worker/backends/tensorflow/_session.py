"""Inside the child: a training run on TensorFlow, under ``MirroredStrategy``."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from tuner.core.devices import DevicePlan
from tuner.core.objective import logged_name
from tuner.core.protocol import RunRequest
from tuner.worker import meters, precision
from tuner.worker.backends.tensorflow import _evaluation as evaluation
from tuner.worker.backends.tensorflow import _inputs as inputs
from tuner.worker.backends.tensorflow._additional_losses import correct_additional_losses
from tuner.worker.backends.tensorflow._devices import (
    build_strategy,
    gpu_name,
    peak_memory_per_device,
)
from tuner.worker.backends.tensorflow._loops import make_loop
from tuner.worker.backends.tensorflow._noise import NoiseMeter
from tuner.worker.building import SAMPLES, FirstInputs
from tuner.worker.determinism import seed_everything
from tuner.worker.meters import Emit, Meter
from tuner.worker.session import ModelRecipe, Session, initial_weights, plan_run
from tuner.worker.sources import Source


def versions() -> dict[str, str]:
    """TensorFlow and Keras versions."""
    return {"tensorflow": tf.__version__, "keras": keras.__version__}


class TensorFlowBackend:
    """The TensorFlow side of a session: its strategy and devices."""

    name = "tensorflow"

    def __init__(self, strategy: Any, plan: DevicePlan) -> None:
        self.strategy = strategy
        self._plan = plan

    def evaluator(self, session: Session) -> Callable[[], float]:
        """The evaluation over the same first ``val_samples`` samples at any batch, none dropped."""
        val_samples = session.request.budget.val_samples
        val = inputs.val_batches(session.source, session.batch, val_samples)
        key = logged_name(session.request.workload.objective)
        return evaluation.evaluator(session.loop.model, val, key, session.val_logs)

    def input_throughput(self, session: Session) -> float:
        """What the distributed input pipeline delivers alone (:func:`meters.input_throughput`)."""
        stream = inputs.distributed_train(
            session.source, self.strategy, session.batch, seed=session.request.seed
        )
        return meters.input_throughput(stream, session.steps, session.batch, _wait)

    def noise_meter(self, session: Session, steps: int) -> NoiseMeter | None:
        """The noise meter on batches drawn apart from training (``None``: dataset function)."""
        batch = session.batch
        dataset = inputs.noise_batches(session.source, batch, seed=session.request.seed + 1)
        if dataset is None:
            return None
        return NoiseMeter(self.strategy, session.loop.model, dataset, batch, steps)

    def peak_memory_per_device(self) -> list[int | None]:
        """Peak bytes per replica device (GPUs only; ``None`` where TensorFlow cannot tell)."""
        return peak_memory_per_device(self._plan)

    def device_kind(self) -> str:
        """``cpu``, or the first GPU's name."""
        return "cpu" if self._plan.kind == "cpu" else gpu_name()

    versions = staticmethod(versions)


def _wait(batch: Any) -> None:
    # Waits until the batch is really there (its first tensor, on its device).
    np.asarray(tf.nest.flatten(batch, expand_composites=True)[0])


def _allow_accumulation(strategy: Any) -> None:
    """Let ``strategy`` run Keras's gradient accumulation: Keras 3.15 accumulates or applies
    inside a ``tf.cond`` that updates through ``maybe_merge_call``, and TensorFlow refuses a
    ``merge_call`` there. With the merge skipped (as under XLA on GPUs) Keras updates in the
    replica context, the gradients all-reduced as before (2 CPU replicas: bit-identical without
    accumulation; 2 micro-steps of 32 end 9.4e-8 from one step at 64)."""
    extended = strategy.extended
    if callable(getattr(extended, "_use_merge_call", None)):
        extended._use_merge_call = lambda: False


def open_session(request: RunRequest, emit: Emit, record_steps: bool = False) -> Session:
    """Build the strategy, load the data, build and compile the model in the request's loop."""
    timings: dict[str, float] = {}
    plan = request.plan
    mark = time.perf_counter()
    strategy = build_strategy(plan)
    if request.accumulation_steps > 1:
        _allow_accumulation(strategy)
    timings["device_init_s"] = time.perf_counter() - mark

    mark = time.perf_counter()
    precision_name = precision.apply(request)  # before any model is built
    batch = request.global_batch_size
    seed_everything(request.seed)  # an unseeded shuffle in the data: the same order per seed
    source = inputs.load_source(request.workload)
    inputs.refuse_across_replicas(source, plan.num_replicas)
    steps, windows, checks, rule = plan_run(request, batch, source)
    first = FirstInputs(lambda size: inputs.first_batch(source, "train", size))
    initial = initial_weights(request, place=lambda: tf.device("/cpu:0"), inputs=first)
    recipe = ModelRecipe(request, rule, initial, precision_name, inputs=first)
    loop = make_loop(
        request.loop,
        strategy,
        recipe.build,
        recipe.compile_args,
        reduction=request.loss_reduction,
        record_steps=record_steps,
    )
    train_data = inputs.train_stream(source, strategy, batch, seed=request.seed)
    notes = _additional_loss_notes(request, loop.model, strategy, source)
    timings["build_s"] = time.perf_counter() - mark
    return Session(
        request=request,
        plan=plan,
        backend=TensorFlowBackend(strategy, plan),
        source=source,
        batch=batch,
        steps=steps,
        windows=windows,
        recipe=recipe,
        loop=loop,
        train_data=train_data,
        meter=Meter(emit, samples_per_epoch=steps * batch, epochs=windows),
        timings=timings,
        checks=checks,
        notes=notes,
    )


def _additional_loss_notes(
    request: RunRequest, model: Any, strategy: Any, source: Source
) -> dict[str, Any]:
    """``add_loss`` terms Keras scales twice on several replicas, corrected or said (the loops in
    a replica context; a dataset function gives no local batch)."""
    if request.loop not in ("fit", "custom") or source.form == inputs.FUNCTION:
        return {}
    batch = inputs.first_batch(source, "train", SAMPLES)
    note = correct_additional_losses(model, strategy, batch)
    return {"add_loss_note": note} if note else {}
