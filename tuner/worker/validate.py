"""Inside the child: one validation run (mode ``validate``), the evidence ``tuner validate``
compares between one device and several. Backend-neutral.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from tuner.core.errors import WorkloadError, error_line
from tuner.core.protocol import Result, ValidateRequest
from tuner.worker import determinism
from tuner.worker.backends import backend_name, load, open_session
from tuner.worker.meters import Emit, UtilizationSampler
from tuner.worker.session import Loop, summary, train


def run_validation(request: ValidateRequest, emit: Emit) -> Result:
    """Train with every step's loss recorded, the stochastic layers deterministic; a model that
    refuses its data raises :class:`WorkloadError` with Keras's own line."""
    try:
        return _validation_run(request, emit)
    except ValueError as exc:
        raise WorkloadError(error_line(exc)) from exc


def _validation_run(request: ValidateRequest, emit: Emit) -> Result:
    load(backend_name(request))  # first: under JAX, seeding must not import TensorFlow
    determinism.seed_everything(request.seed)  # before the workload's data function runs
    session = open_session(request, emit, record_steps=True)
    session.train_data, digests = determinism.fixed_batches(
        session.train_data,
        session.steps * session.windows,
        reorder=os.environ.get(determinism.REORDER_ENV) == "1",
    )
    loop = session.loop
    neutralized = determinism.make_deterministic(loop.model)  # before the first step traces
    before = named_values(loop)
    sampler = UtilizationSampler(session.plan)
    train(session)
    after = named_values(loop)
    if request.weights_file and (request.gang is None or request.gang.process_id == 0):
        # Across hosts every rank holds the same copies (weight_sync says if not): rank 0's.
        save_weights(Path(request.weights_file), before, after)
    payload = {
        **summary(session),
        "step_losses": loop.step_losses,
        "replica_examples": loop.replica_examples(),
        "steps": len(loop.step_losses),
        "variable_devices": loop.variable_devices(),
        "peak_memory_per_device": session.backend.peak_memory_per_device(),
        "utilization_per_device": sampler.stop(),
        "deterministic_layers": determinism.describe(neutralized),
        "batch_digests": digests,
        "variable_names": list(after),
        "model_variables": len(loop.model.weights),
        "batch_norm_layers": batch_norm_layers(loop.model),
        "embedding_layers": layers_of(loop.model, "Embedding"),
        **weight_sync(loop.variable_copies()),
    }
    return Result(status="ok", payload=payload, timings=session.timings)


def named_values(loop: Loop) -> dict[str, np.ndarray]:
    """Every variable's value (its first copy) by its Keras path: the model's weights, then the
    optimizer's (those that exist yet: ``fit`` builds the slots on its first step)."""
    model = loop.model
    variables = [*model.weights, *(model.optimizer.variables if model.optimizer else [])]
    copies = loop.variable_copies()
    names = [
        str(getattr(v, "path", None) or getattr(v, "name", i)) for i, v in enumerate(variables)
    ]
    if len(names) != len(copies) or len(set(names)) != len(names):
        names = [f"variable {i}" for i in range(len(copies))]  # order is all that is left
    return {name: values[0] for name, values in zip(names, copies, strict=True) if values}


def save_weights(path: Path, before: dict[str, np.ndarray], after: dict[str, np.ndarray]) -> None:
    """``after`` under ``final/<i>``, and the value before (if any) under ``initial/<i>``."""
    arrays: dict[str, Any] = {}
    for i, (name, value) in enumerate(after.items()):
        arrays[f"final/{i}"] = value
        if name in before and np.shape(before[name]) == np.shape(value):
            arrays[f"initial/{i}"] = before[name]
    with path.open("wb") as file:
        np.savez(file, allow_pickle=False, **arrays)


def weight_sync(copies: list[list[np.ndarray]]) -> dict[str, Any]:
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


def batch_norm_layers(model: Any) -> list[str]:
    """The names of ``model``'s BatchNormalization layers, nested ones included: their
    statistics are per micro-batch under accumulation (``tuner validate --accumulation``)."""
    return layers_of(model, "BatchNormalization")


def layers_of(model: Any, kind: str) -> list[str]:
    """The names of ``model``'s layers of class ``keras.layers.<kind>``, nested ones included.
    ``Embedding``: under TensorFlow their gradients are ``IndexedSlices``, squared slice by slice
    in a true step but summed first by accumulation (``tuner validate --accumulation``)."""
    import keras

    cls = getattr(keras.layers, kind)
    flatten = getattr(model, "_flatten_layers", None)
    layers = list(flatten(include_self=False)) if flatten else list(model.layers)
    return [layer.name for layer in layers if isinstance(layer, cls)]
