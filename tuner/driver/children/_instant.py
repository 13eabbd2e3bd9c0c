"""Test aid: answer every child request at once, in the driver, with no child and no framework
(``TUNER_TEST_INSTANT_TRIALS=1``; docs/development.md). Every run is ``ok`` with a loss and
throughput that are deterministic functions of its batch, rule, replicas and seed.
``TUNER_TEST_INSTANT_SECONDS=<s>`` makes each training run sleep ``s`` seconds, so that several
workers on one study overlap their runs as real ones do. Never set either for a real study.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import replace
from typing import Any

from tuner.core.outcome import ChildRun
from tuner.core.protocol import (
    InspectRequest,
    ProbeRequest,
    Request,
    Result,
    TrialRequest,
    encode_result,
)
from tuner.driver.children import _runner
from tuner.driver.children._requests import OnEvent

INSTANT_ENV = "TUNER_TEST_INSTANT_TRIALS"
SECONDS_ENV = "TUNER_TEST_INSTANT_SECONDS"
N_TRAIN = 1 << 20
"""The training set the stand-in workload reports: larger than any grid a benchmark builds."""
N_VAL = 4096
PARAMETERS = 321
DEVICE_KIND = "instant stand-in (TUNER_TEST_INSTANT_TRIALS)"
"""What each fabricated run reports as its device kind, so a stored trial says what made it."""


def is_enabled() -> bool:
    """Whether the stand-in answers child requests (``TUNER_TEST_INSTANT_TRIALS=1``)."""
    return os.environ.get(INSTANT_ENV) == "1"


def run_seconds() -> float:
    """How long a fabricated training run takes (``TUNER_TEST_INSTANT_SECONDS``, default 0)."""
    text = os.environ.get(SECONDS_ENV) or "0"
    try:
        return max(float(text), 0.0)
    except ValueError:
        raise ValueError(f"{SECONDS_ENV} must be a number of seconds, got {text!r}") from None


class InstantRunner:
    """The stand-in as a :class:`~tuner.driver.children.ChildRunner`: :func:`instant_run`."""

    def run(
        self,
        request: Request,
        env: dict[str, str],
        timeout_s: float,
        on_event: OnEvent | None = None,
    ) -> ChildRun:
        return instant_run(request)


def instant_run(request: Request) -> ChildRun:
    """The run a child would leave for ``request``, fabricated at once (see the module)."""
    started = time.time()
    if isinstance(request, InspectRequest):  # the workload check: sizes, no hypermodel
        sizes = {"n_train": N_TRAIN, "n_val": N_VAL, "parameters": PARAMETERS}
        backend = request.workload.backend
        payload = {**sizes, "input_form": "arrays", "backend": backend, "hypermodel": None}
        result = Result(status="ok", payload=payload)
    elif isinstance(request, TrialRequest | ProbeRequest):
        seconds = run_seconds()
        cancel = _runner.cancel_event()  # a gang's rank: another rank's failure ends it
        if cancel is None:
            time.sleep(seconds)  # as a child's training keeps the driver waiting
        elif cancel.wait(seconds):  # ended early, as a killed child is
            ended = time.time()
            return ChildRun(returncode=-9, result_text=None, wall_s=ended - started)
        result = Result(status="ok", payload=_trained(request), timings={"training_s": seconds})
    else:  # validate checks the framework's own arithmetic: nothing here to fake honestly
        error = f"{INSTANT_ENV} has no stand-in for mode {request.mode!r}"
        result = Result(status="error", error=error)
    ended = time.time()
    timings = {**result.timings, "child_started_at": started, "child_finished_at": ended}
    return ChildRun(
        returncode=0,
        result_text=encode_result(replace(result, timings=timings)),
        wall_s=ended - started,
        spawned_at=started,
        ended_at=ended,
    )


def _trained(request: TrialRequest | ProbeRequest) -> dict[str, Any]:
    """An ``ok`` run: throughput grows with the per-replica batch and saturates; the loss grows
    with the batch ratio and with the learning rate's distance from the square-root rule; the
    seed moves the loss by under 1 %."""
    batch = request.global_batch_size
    replicas = request.plan.num_replicas
    rule = request.rule
    ratio = rule.ratio if rule is not None else 1.0
    lr_scale = rule.learning_rate / rule.base_lr if rule is not None else 1.0
    per_replica = batch / replicas
    throughput = replicas**0.9 * 10_000.0 * per_replica / (per_replica + 256.0)
    jitter = 1.0 + ((request.seed * 7919) % 11 - 5) / 1000.0
    off = math.log2(lr_scale / math.sqrt(ratio))  # > 0: a rate above the sqrt rule's
    loss = 0.2 * (1 + 0.02 * math.log2(ratio) + 0.05 * abs(off) + 0.03 * max(off, 0.0))
    windows = [throughput * (1.0 + d) for d in (-0.01, 0.0, 0.01)]
    steps = max(1, N_TRAIN // batch // len(windows))
    result: dict[str, Any] = {
        "backend": request.workload.backend,
        "device_kind": DEVICE_KIND,
        "precision": request.precision,
        "num_replicas": replicas,
        "steps_per_epoch": steps,
        "windows": len(windows),
        "window_steps": steps,
        "train_samples_used": steps * batch * len(windows),
        "epoch_losses": [loss * 1.2, loss * 1.05, loss],
        "epoch_throughputs": windows,
        "optimizer_learning_rate": request.learning_rate,
        "model_parameters": PARAMETERS,
    }
    if isinstance(request, ProbeRequest):
        return {**result, "probe": True, "peak_memory_bytes": batch * 1024}
    return {
        **result,
        "final_loss": loss * jitter,
        "train_loss": loss * jitter * 1.1,
        "throughput": throughput,
        "throughput_spread": 0.01,
        "window_throughputs": windows,
        "warmup_windows": 0,
        "peak_rss_bytes": 1 << 28,
    }
