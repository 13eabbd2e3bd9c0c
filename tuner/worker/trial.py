"""Inside the child: one trial of the search (mode ``trial``) — train, then measure.

A trial reports status ``ok`` or ``diverged`` with its measurements: the validation loss over
every validation sample, the median steady-state throughput, memory peaks and, with two or more
replicas, the gradient noise scale.
"""

from __future__ import annotations

import math
import resource
import statistics
import time
from typing import Any

import tensorflow as tf

from tuner.worker.meters import Emit, peak_memory_bytes
from tuner.worker.noise import NoiseMeter, auto_noise_steps
from tuner.worker.session import Session, make_dataset, open_session, summary, train


def run_trial(request: dict[str, Any], emit: Emit) -> dict[str, Any]:
    """Train one trial and measure it; raises on failure (the caller classifies it)."""
    session = open_session(request, emit)
    noise = _noise_meter(session)
    train(session, noise)
    result = {**summary(session), **_noise_fields(session, noise)}
    meter = session.meter
    if meter.diverged_at is not None:
        result.update(
            status="diverged",
            error=f"training loss became {meter.losses[-1]} in epoch {meter.diverged_at}",
        )
        return result
    final_loss = _validation_loss(session)
    steady = meter.throughputs[1:] or meter.throughputs
    median = statistics.median(steady)
    result.update(
        status="ok" if math.isfinite(final_loss) else "diverged",
        final_loss=final_loss,
        train_loss=meter.losses[-1],
        throughput=median,
        throughput_spread=(max(steady) - min(steady)) / median if median > 0 else 0.0,
        peak_memory_bytes=peak_memory_bytes(session.plan),
        peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    )
    if result["status"] == "diverged":
        result["error"] = f"validation loss is {final_loss}"
    return result


def _validation_loss(session: Session) -> float:
    """The trained model's loss over every validation sample, timed as ``evaluate_s``."""
    mark = time.perf_counter()
    _, _, x_val, y_val = session.arrays
    # Every validation sample counts (no drop_remainder), so trials at different batch sizes
    # report the loss over the same samples.
    val = make_dataset(x_val, y_val, session.batch, shuffle_seed=None, drop_remainder=False)
    loss = float(session.loop.model.evaluate(val, verbose=0, return_dict=True)["loss"])
    session.timings["evaluate_s"] = time.perf_counter() - mark
    return loss


def _noise_meter(session: Session) -> NoiseMeter | None:
    """The gradient-noise-scale meter of a trial with 2+ replicas on a ``MirroredStrategy``."""
    request = session.request
    if not request.get("noise_scale") or session.plan.num_replicas < 2:
        return None
    if request.get("loop", "fit") not in ("fit", "custom"):
        return None
    steps = int(request.get("noise_scale_steps") or auto_noise_steps(session.steps))
    batch = session.batch
    x, y = session.arrays[0], session.arrays[1]
    # Shuffled afresh on every pass (independent batches matter more than anything here), with
    # a buffer of 16 batches rather than the whole set: less to fill before the first step.
    dataset = (
        tf.data.Dataset.from_tensor_slices((x, y))
        .shuffle(min(len(x), 16 * batch), seed=int(request["seed"]) + 1)
        .batch(batch, drop_remainder=True)
        .prefetch(tf.data.AUTOTUNE)
    )
    model = session.loop.model
    return NoiseMeter(session.strategy, model, dataset, session.recipe.loss, batch, steps)


def _noise_fields(session: Session, noise: NoiseMeter | None) -> dict[str, Any]:
    """The noise scale's result fields, or the note that says why it was not measured."""
    if noise is None:
        if not session.request.get("noise_scale"):
            return {}
        return {
            "noise_scale_note": "the gradient noise scale needs at least 2 replicas"
            if session.plan.num_replicas < 2
            else "the gradient noise scale is measured with loop = fit or custom"
        }
    fields: dict[str, Any] = {"noise_scale_note": noise.stopped} if noise.stopped else {}
    fields.update(
        gradient_noise_scale=noise.scale.value,
        gradient_noise_scale_per_epoch=noise.scale.history,
        noise_scale_steps=noise.measured_steps,
    )
    return fields
