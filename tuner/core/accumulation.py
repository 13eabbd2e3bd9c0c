"""Gradient accumulation as a way to reach a global batch that does not fit: ``k`` micro-steps of
``batch / k`` applied once (``docs/guide/accumulation.md``). Pure.

Keras 3.15's semantics (``keras/src/optimizers/base_optimizer.py``, measured by ``tuner validate
--accumulation``): the mean of the k gradients, so with a mean loss one step at ``k ×`` the batch;
the learning rate is not scaled; ``optimizer.iterations`` counts updates while learning-rate
schedules see every micro-step.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from optuna.trial import FrozenTrial

from tuner.core.configurations import (
    ACCUMULATION_STEPS,
    is_complete,
    model_config,
    precision_of,
    smallest_oom_batch,
    steps_of,
)
from tuner.core.record import decode

MICRO_BATCH = "micro_batch_per_replica"
"""Trial attribute: the batch each replica computes at once (``global / (replicas × steps)``)."""
REASON = "accumulation_reason"
"""Trial attribute: why the trial accumulated (the out-of-memory that made it)."""


def attrs(batch: int, replicas: int, steps: int) -> dict[str, int]:
    """The attributes a trial of an accumulating study stores (``steps`` 1 included)."""
    return {ACCUMULATION_STEPS: steps, MICRO_BATCH: batch // (replicas * steps)}


def first_steps(batch: int, replicas: int, unfit: int | None) -> int | None:
    """The micro-steps to try ``batch`` with first: the smallest power of two that brings the
    micro-batch below ``unfit`` (the smallest batch that did not fit in one step; ``None``: 1);
    ``None`` when no split of ``batch`` over ``replicas`` gets there."""
    steps = 1
    while unfit is not None and batch // steps >= unfit:
        steps *= 2
        if batch % (replicas * steps):
            return None
    return steps


def next_steps(batch: int, replicas: int, steps: int) -> int | None:
    """Twice ``steps``, or ``None`` when the batch does not split further over ``replicas``."""
    more = steps * 2
    return None if batch % (replicas * more) else more


def smallest_unfit(
    trials: Iterable[FrozenTrial], signature: str, config: str, precision: str
) -> int | None:
    """The smallest batch known not to fit in one step: out of memory, or accumulating."""
    trials = list(trials)
    sizes = [
        int(t.params["global_batch_size"])
        for t in trials
        if steps_of(t) > 1
        and "global_batch_size" in t.params
        and decode(t).configuration.device_signature == signature
        and model_config(t) == config
        and precision_of(t) == precision
    ]
    oom = smallest_oom_batch(trials, signature, config, precision)
    return min([*sizes, *([oom] if oom is not None else [])], default=None)


def accumulation_fields(chosen: FrozenTrial, same_config: Sequence[FrozenTrial]) -> dict[str, Any]:
    """The ``accumulation`` block of an accumulating ``chosen`` (vs its largest one-step batch)."""
    steps = steps_of(chosen)
    if steps <= 1:
        return {}
    fitting = [t for t in same_config if is_complete(t) and steps_of(t) == 1]
    block: dict[str, Any] = {
        "steps": steps,
        "micro_batch_per_replica": decode(chosen).configuration.micro_batch_per_replica,
        "reason": decode(chosen).configuration.accumulation_reason,
        "largest_fitting_batch_size": None,
        "largest_fitting_throughput": None,
        "throughput_ratio": None,
    }
    if fitting:
        best = max(fitting, key=lambda t: (int(t.params["global_batch_size"]), t.values[1]))
        throughput = float(best.values[1])
        block["largest_fitting_batch_size"] = int(best.params["global_batch_size"])
        block["largest_fitting_throughput"] = throughput
        block["throughput_ratio"] = float(chosen.values[1]) / throughput if throughput else None
    return {"accumulation": block}


MERGE_CALL = "`merge_call` called while defining a new graph"
"""What Keras 3.15's TensorFlow optimizer raises accumulating under ``tf.distribute`` (its
``tf.cond`` calls ``merge_call``): seen only where the child cannot skip the merge."""


def failure_line(error: str, backend: str) -> str:
    """Why an accumulating run failed: what to do for Keras's known failure, else the error."""
    if backend == "tensorflow" and MERGE_CALL in error:
        return (
            "Keras's gradient_accumulation_steps fails under TensorFlow's MirroredStrategy "
            "(a tf.cond around merge_call) and this TensorFlow has no switch to skip the merge "
            "(extended._use_merge_call); accumulate with --backend jax"
        )
    return error


def cost_text(rec: dict[str, Any]) -> str:
    """The recommendation's accumulation line (``""`` when its batch fit in one step):
    ``batch 4096 is reached only by accumulation: 2 micro-steps of 1024 per replica; 0.81× the
    throughput of batch 2048, the largest that fit in one step (12.1k vs 14.9k samples/s)``."""
    block = rec.get("accumulation")
    if not isinstance(block, dict) or not block.get("steps"):
        return ""
    text = (
        f"batch {rec['global_batch_size']} is reached only by accumulation: {block['steps']} "
        f"micro-steps of {block['micro_batch_per_replica']} per replica"
    )
    largest, ratio = block.get("largest_fitting_batch_size"), block.get("throughput_ratio")
    if largest is None or ratio is None:
        return text + "; no batch fit in one step to compare its throughput with"
    return (
        f"{text}; {ratio:.2f}× the throughput of batch {largest}, the largest that fit in one "
        f"step ({rec['throughput']:,.0f} vs {block['largest_fitting_throughput']:,.0f} samples/s)"
    )
