"""The warm spare in the runner: which spare may take a request, starting one (beside the
workload check, or when the running child's timed windows are over), and the hand-over."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Hashable
from dataclasses import replace

from tuner.core.protocol import Event, InspectRequest, Request, WindowsDoneEvent, encode_request
from tuner.driver.children import _forked as forked
from tuner.driver.children import _warm as warm
from tuner.driver.children._process import (
    Child,
    child_command,
    child_environment,
    new_folder,
    spawn,
    worker_args,
)
from tuner.driver.children._requests import OnEvent
from tuner.files import atomic_write_text


def spare_key(request: Request, env: dict[str, str]) -> Hashable:
    """What a warm child must have been started with to take ``request``: the same environment
    (the plan's, and this process's as the child inherits it), backend and working folder."""
    return (tuple(sorted(child_environment(env).items())), request.workload.backend, os.getcwd())


def _start_spare(request: Request, env: dict[str, str]) -> None:
    """Have a warm child started for the next request, in ``env``."""
    backend = request.workload.backend
    key = spare_key(request, env)

    def start() -> Child:
        folder = new_folder()
        paths = (folder / "request.json", folder / "result.json")
        if forked.enabled():
            return forked.fork_spare(key, backend, env, folder, worker_args(*paths, backend))
        return spawn(folder, child_command(*paths, backend), env, time.time())

    warm.POOL.start(key, start)


def warm_child(request: Request, key: Hashable) -> Child | None:
    """The spare started for ``key``, handed ``request``: it was waiting for it on stdin. ``None``
    when there is none (or it died meanwhile: the caller starts a fresh child)."""
    if _spans_hosts(request):
        return None
    spare = warm.POOL.take(key)
    if spare is None:
        return None
    assert isinstance(spare, Child)
    spawned_at = time.time()
    try:
        atomic_write_text(
            spare.folder / "request.json", encode_request(replace(request, spawned_at=spawned_at))
        )
        assert spare.proc.stdin is not None
        spare.proc.stdin.write(b"go\n")
        spare.proc.stdin.close()
    except OSError:  # it died just now
        spare.discard()
        return None
    except BaseException:  # taken from the pool but not handed over: no one else will end it
        spare.discard()
        raise
    spare.spawned_at = spawned_at
    return spare


class SpareOrder:
    """The next warm child, wanted once the running child's timed windows are over: the event
    reader notes it, the thread that waits for the child starts it (``_warm`` says why)."""

    def __init__(self, request: Request, env: dict[str, str]) -> None:
        self.wanted = threading.Event()
        self._request = request
        self._env = env

    def watching(self, on_event: OnEvent | None) -> OnEvent:
        """``on_event``, noting ``windows_done`` on the way."""

        def passing_on(event: Event) -> None:
            if isinstance(event, WindowsDoneEvent):
                self.wanted.set()
            if on_event is not None:
                on_event(event)

        return passing_on

    def start(self) -> None:
        _start_spare(self._request, warm.POOL.expected() or self._env)


def next_spare(request: Request, env: dict[str, str]) -> SpareOrder | None:
    """The warm child to start for the run after this one: at once beside the workload check (for
    the environment the driver expects next), or, for a training run, the returned order; none
    after the search's last run (:func:`~tuner.driver.children._warm.last_run`)."""
    allowed = warm.uses()
    if _spans_hosts(request):
        return None
    if isinstance(request, InspectRequest):
        expected = warm.POOL.expected()
        if expected is not None and warm.CHECK in allowed:
            _start_spare(request, expected)
        return None
    return SpareOrder(request, env) if warm.TRIALS in allowed and warm.POOL.wants_next() else None


def _spans_hosts(request: Request) -> bool:
    # A rank's child joins the other hosts' runtime at its start: none is started ahead.
    plan = getattr(request, "plan", None)
    return plan is not None and plan.hosts > 1
