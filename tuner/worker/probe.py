"""Inside the child: the batch-size probe (mode ``probe``): trains like a trial, reports the
memory peak, not the loss.

With ``probe_search`` the child tries several sizes in this one process (one import, one device
set-up) until one runs out of memory or :func:`tuner.core.probe.sizes_per_child` are done.

Test aid: ``TUNER_TEST_FAULT=abort@probe:BATCH`` (or ``segfault@probe:BATCH``) kills the probe
child by that signal once it has announced BATCH, as a capped allocator can. Inert unless set.
"""

from __future__ import annotations

import gc
import os
import time
from dataclasses import asdict, replace
from typing import Any

import keras

from tuner.core.devices import CPU_CAP_ENV
from tuner.core.errors import error_line
from tuner.core.oom import is_child_oom
from tuner.core.probe import search_from_state, try_until_oom
from tuner.core.protocol import (
    ProbeAttemptEvent,
    ProbeRequest,
    ProbeResultEvent,
    Result,
    WindowsDoneEvent,
)
from tuner.worker.backends import open_session
from tuner.worker.meters import Emit
from tuner.worker.session import peak_memory_bytes, train
from tuner.worker.session import summary as run_summary


def run_probe(request: ProbeRequest, emit: Emit) -> Result:
    """The request's probe search, until done or out of memory; else its one batch."""
    state = request.probe_search
    if state is None:
        session = open_session(request, emit)
        train(session)
        emit(WindowsDoneEvent())  # the next child may start importing
        payload = {
            **run_summary(session),
            "probe": True,
            "peak_memory_bytes": peak_memory_bytes(session),
        }
        return Result(status="ok", payload=payload, timings=session.timings)
    attempts: list[dict[str, Any]] = []

    def attempt(batch: int) -> bool:
        emit(ProbeAttemptEvent(batch))
        _inject_fault(batch)
        record = _attempt(request, batch)
        attempts.append(asdict(record))  # stored by the driver as these fields
        emit(record)
        return record.fits

    try_until_oom(search_from_state(dict(state)), attempt, request.probe_sizes_per_child)
    emit(WindowsDoneEvent())
    return Result(status="ok", payload={"probe": True, "attempts": attempts})


def _attempt(request: ProbeRequest, batch: int) -> ProbeResultEvent:
    """Train ``batch`` in a fresh session: whether it fitted, how long it took, its peak."""
    started = time.perf_counter()
    peak: int | None = None
    error = None
    try:
        peak = _train_at(request, batch)
    except Exception as exc:  # out-of-memory is the answer; anything else is raised
        if not is_child_oom(exc, cpu_capped=bool(os.environ.get(CPU_CAP_ENV))):
            raise
        error = error_line(exc, limit=600)
    # The session (and, after an out-of-memory, the traceback that held it) is gone here: free
    # what the framework still caches before the next size.
    keras.backend.clear_session()
    gc.collect()
    seconds = time.perf_counter() - started
    return ProbeResultEvent(batch, error is None, seconds, peak_memory_bytes=peak, error=error)


def _train_at(request: ProbeRequest, batch: int) -> int | None:
    """Open a session at ``batch``, train its steps; the memory peak (the session is released)."""
    # The session's own events (epochs, progress) stay here: the driver follows the probe's.
    session = open_session(replace(request, global_batch_size=batch), lambda event: None)
    train(session)
    return peak_memory_bytes(session)


def _inject_fault(batch: int) -> None:
    for entry in os.environ.get("TUNER_TEST_FAULT", "").split(","):
        fault, _, at = entry.partition("@")
        if at != f"probe:{batch}":
            continue
        if fault == "abort":
            os.abort()
        if fault == "segfault":
            import ctypes

            ctypes.string_at(0)
