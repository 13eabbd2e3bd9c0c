"""Inside the child: the learning-rate range test (mode ``lr_find``) of ``tuner lr-find``.

The user's training as a trial runs it, the learning rate Keras's ``ExponentialDecay`` with a
rate above 1, from ``min_lr`` to ``max_lr`` inside the compiled step (no per-step assignment).
Each window is one step, so its reported loss is that step's own.
"""

from __future__ import annotations

import math
import time
from typing import Any

import keras

from tuner.core.errors import WorkloadError, error_line
from tuner.core.lr_find import DivergenceWatch, ramp
from tuner.core.progress import StepReporter
from tuner.core.protocol import LrFindRequest, Result
from tuner.worker import hypermodel, optim
from tuner.worker.backends import backend_name, load, open_session
from tuner.worker.meters import Emit
from tuner.worker.session import hold_until_exit

PROGRESS_EVERY_S = 10.0
"""How often the child says how far along the ramp it is (a line each, in the driver)."""


def run_lr_find(request: LrFindRequest, emit: Emit) -> Result:
    """Train along the ramp until it ends or the loss diverges; status ``ok`` with each step's
    rate and loss. A model that refuses its data raises :class:`WorkloadError` (exit code 2)."""
    try:
        return _range_test(request, emit)
    except ValueError as exc:
        raise WorkloadError(error_line(exc)) from exc


def _range_test(request: LrFindRequest, emit: Emit) -> Result:
    load(backend_name(request))
    session = open_session(request, emit)
    hold_until_exit(session)
    model = session.loop.model
    optimizer = optim.unscaled(model.optimizer)
    described = optim.describe(model.optimizer, session.recipe.compiled_by_build, None)
    steps = request.lr_steps
    rates = ramp(request.min_lr, request.max_lr, steps)
    optimizer.learning_rate = keras.optimizers.schedules.ExponentialDecay(
        initial_learning_rate=request.min_lr,
        decay_steps=steps - 1,
        decay_rate=request.max_lr / request.min_lr,
    )
    losses: list[float] = []
    watch = DivergenceWatch(steps)
    stopped: list[str] = []
    progress = StepReporter(emit, session.batch, steps, every_s=PROGRESS_EVERY_S)

    def on_step(step: int, loss: float, seconds: float) -> bool:
        losses.append(loss)
        progress(len(losses))
        if watch.add(loss):
            stopped.append("diverged" if math.isfinite(loss) else "non-finite loss")
            return False
        return True

    started = time.perf_counter()
    session.loop.run(session.train_data, session.windows, session.steps, on_step, None)
    seconds = time.perf_counter() - started
    payload: dict[str, Any] = {
        "backend": session.backend.name,
        "devices": session.loop.devices,
        "num_replicas": session.plan.num_replicas,
        "precision": session.recipe.precision,
        "global_batch_size": session.batch,
        "learning_rates": rates[: len(losses)],
        "losses": [loss if math.isfinite(loss) else None for loss in losses],
        "planned_steps": steps,
        "stopped": stopped[0] if stopped else None,
        # The schedule at the optimizer's own step count: proof the ramp drove the updates.
        "learning_rate_after": float(session.loop.learning_rate()),
        "optimizer_iterations": int(keras.ops.convert_to_numpy(optimizer.iterations)),
        "optimizer": described,
        "compile": session.recipe.describe(),
        "model_parameters": hypermodel.parameter_count(model),
        "trainable_parameters": sum(int(math.prod(w.shape)) for w in model.trainable_weights),
        "versions": session.backend.versions(),
        "seconds": seconds,
    }
    return Result(status="ok", payload=payload, timings={**session.timings, "ramp_s": seconds})
