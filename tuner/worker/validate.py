"""Inside the child: one validation run (mode ``validate``), the evidence ``tuner validate``
compares between one device and several.

It reports per-step losses, the examples each replica processed, where the variables live, and
the largest difference between any variable's replica copies. Backend-neutral: the session's
loop (:mod:`tuner.worker.backends.tensorflow._loops` or :mod:`tuner.worker.backends.jax._loop`)
keeps the evidence.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tuner.core.protocol import Result, ValidateRequest
from tuner.worker.backends import open_session
from tuner.worker.meters import Emit, UtilizationSampler
from tuner.worker.session import summary, train


def run_validation(request: ValidateRequest, emit: Emit) -> Result:
    """Train with every step's loss recorded; status ``ok`` with the evidence (raises if it
    fails)."""
    session = open_session(request, emit, record_steps=True)
    sampler = UtilizationSampler(session.plan)
    train(session)
    loop = session.loop
    payload = {
        **summary(session),
        "step_losses": loop.step_losses,
        "replica_examples": loop.replica_examples(),
        "steps": len(loop.step_losses),
        "variable_devices": loop.variable_devices(),
        "peak_memory_per_device": session.backend.peak_memory_per_device(),
        "utilization_per_device": sampler.stop(),
        **weight_sync(loop.variable_copies()),
    }
    return Result(status="ok", payload=payload, timings=session.timings)


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
