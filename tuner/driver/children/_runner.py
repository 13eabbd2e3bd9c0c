"""Runs one request in a fresh child process (``python -m tuner.worker``) in its own session, or
in the warm child started for it (:mod:`tuner.driver.children._spares`), under a watchdog:
:class:`ProcessRunner`, the driver's :class:`~tuner.driver.children.ChildRunner`.
Its own session (and, on Linux, its supervisor) so that nothing the trial started outlives it;
why a child per trial: docs/design/architecture.md.
"""

from __future__ import annotations

import functools
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from pathlib import Path

from tuner.core.outcome import ChildRun
from tuner.core.protocol import Request, decode_event, encode_request
from tuner.driver.children import _trial_dirs as trial_dirs
from tuner.driver.children._process import (
    Child,
    Process,
    child_command,
    kill_group,
    new_folder,
    reap_group,
    spawn,
)
from tuner.driver.children._requests import OnEvent
from tuner.driver.children._spares import SpareOrder, next_spare, spare_key, warm_child

_ORDER_POLL_S = 0.05
"""How often the waiting thread looks for the child's exit while it also waits for its
``windows_done`` (or an order to end it): a child that exits first is noticed this much later."""
_CANCEL: ContextVar[threading.Event | None] = ContextVar("tuner_child_cancel", default=None)


@contextmanager
def ending_on(event: threading.Event) -> Iterator[None]:
    """A child started in this block (this thread) is ended as soon as ``event`` is set: a trial
    across hosts ends every rank's child when one rank's fails (:mod:`tuner.driver.gang`)."""
    token = _CANCEL.set(event)
    try:
        yield
    finally:
        _CANCEL.reset(token)


def cancel_event() -> threading.Event | None:
    """The event the child started here is ended on (:func:`ending_on`), if any."""
    return _CANCEL.get()


def run_child(
    request: Request, env: dict[str, str], timeout_s: float, on_event: OnEvent | None = None
) -> ChildRun:
    """Run ``request`` in a child with ``env`` added to the environment; wait at most ``timeout_s``
    (then its process group is killed, as on KeyboardInterrupt before that propagates)."""
    _sweep_once()
    key = spare_key(request, env)
    child = warm_child(request, key) or _cold_child(request, env)
    try:
        order = next_spare(request, env)
        events = on_event if order is None else order.watching(on_event)
        timed_out = _wait(child.proc, timeout_s, events, order)
        result_path = child.folder / "result.json"
        result_text = result_path.read_text() if result_path.exists() else None
        ended_at = time.time()
        return ChildRun(
            returncode=child.proc.wait(),  # it has ended: _wait saw to it
            result_text=result_text,
            stderr_tail=_file_tail(child.folder / "stderr.log"),
            timed_out=timed_out,
            wall_s=ended_at - child.spawned_at,
            spawned_at=child.spawned_at,
            ended_at=ended_at,
        )
    finally:
        child.close()


class ProcessRunner:
    """The real :class:`~tuner.driver.children.ChildRunner`: :func:`run_child`."""

    run = staticmethod(run_child)


def _cold_child(request: Request, env: dict[str, str]) -> Child:
    """A fresh child that reads ``request`` as it starts."""
    folder = new_folder()
    request_path, result_path = folder / "request.json", folder / "result.json"
    spawned_at = time.time()
    request_path.write_text(encode_request(replace(request, spawned_at=spawned_at)))
    return spawn(folder, child_command(request_path, result_path), env, spawned_at)


@functools.cache
def _sweep_once() -> None:
    # Once per process: the trial folders of workers that died before they could remove them.
    trial_dirs.sweep()


def _wait(
    proc: Process, timeout_s: float, on_event: OnEvent | None, order: SpareOrder | None = None
) -> bool:
    """Pass the child's events on until it exits; whether it had to be killed for ``timeout_s``.
    With ``order``, start the next warm child here once the child's windows are over. Whatever
    happens, nothing of the child's process group outlives this call."""
    reader = threading.Thread(
        target=_read_events, args=(proc, on_event), name="tuner-events", daemon=True
    )
    reader.start()
    timed_out = False
    deadline = time.monotonic() + timeout_s
    cancel = _CANCEL.get()
    try:
        # With an order: until the child exits or its windows are over; then the spare starts
        # from this thread. With a cancel event: until the child exits or it is set.
        # Re-read each turn: once the order is started only a cancel event is left to watch
        # (else the wait below; a loop that watches nothing would spin a core).
        while (order is not None or cancel is not None) and proc.poll() is None:
            if time.monotonic() >= deadline:
                break
            if order is not None and order.wanted.wait(_ORDER_POLL_S):
                order.start()
                order = None
            elif cancel is not None and cancel.wait(0 if order else _ORDER_POLL_S):
                kill_group(proc)
                break
        proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_group(proc)
    except BaseException:
        kill_group(proc)
        raise
    finally:
        reap_group(proc)
    reader.join(timeout=5)
    return timed_out


def _read_events(proc: Process, on_event: OnEvent | None) -> None:
    # Drains stdout to the end (a full pipe would block the child), passing events on.
    assert proc.stdout is not None
    for raw in proc.stdout:
        event = decode_event(raw.decode("utf-8", "replace"))
        if on_event is not None and event is not None:
            on_event(event)


def _file_tail(path: Path, limit: int = 8000) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(max(0, path.stat().st_size - limit))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
