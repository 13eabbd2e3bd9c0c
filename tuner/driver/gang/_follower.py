"""A follower's side (rank ≠ 0): join rank 0, then run each request it is sent in this host's own
child (this host's workload reference and devices), report the run, end the child on rank 0's
word, and leave when the search is over. It never opens the storage."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, cast

from tuner.core.devices import DevicePlan
from tuner.core.gang import Gang
from tuner.core.options import named
from tuner.core.outcome import ChildRun, read_result
from tuner.core.protocol import Request, RunRequest, Workload, decode_request
from tuner.driver.children import ChildRunner, ending_on
from tuner.driver.gang._wire import Closed, Line, run_to_plain

_RETRY_S = 0.5


def own_copy(
    request: Request, env: dict[str, str], plan: DevicePlan, workload: Workload
) -> tuple[Request, dict[str, str]]:
    """Rank 0's ``request`` and ``env`` as this host runs them: its own workload reference (its
    shipped functions) and its own devices and memory cap (``plan``: this host's)."""
    if not isinstance(request, RunRequest):  # no rank 0 sends one: nothing of a host's in it
        return request, env
    theirs = request.plan
    ours = replace(
        theirs,
        gpu_indices=plan.gpu_indices,
        gpu_names=plan.gpu_names,
        gpu_memory_bytes=plan.gpu_memory_bytes,
        memory_limit_bytes=plan.memory_limit_bytes,
    )
    extra = {k: v for k, v in env.items() if k not in theirs.child_environment()}
    copy = cast(Request, replace(request, plan=ours, workload=workload))
    return copy, {**extra, **ours.child_environment()}


Localize = Callable[[Request, dict[str, str]], tuple[Request, dict[str, str]]]


def follow(
    gang: Gang,
    hello: dict[str, Any],
    runner: ChildRunner,
    localize: Localize,
    wait_s: float,
    say: Callable[[str], None],
) -> int:
    """Follow rank 0 of ``gang`` until it says the search is over: the exit code (0 done; 1 rank
    0 never came, went away or stopped; 2 refused). ``localize``: :func:`own_copy` of this host."""
    me = f"rank {gang.rank}/{gang.hosts}"
    line = _connect(gang, wait_s)
    if line is None:
        say(
            f"{me}: no rank 0 at {gang.coordinator} within {wait_s:.0f} s ({named('join_wait')}): "
            "start rank 0 first, and check that this host reaches that address"
        )
        return 1
    try:
        line.send("hello", **hello)
        reply = line.receive(wait_s)
        if reply["kind"] == "refused":
            say(f"{me}: refused by rank 0: {reply.get('why')}")
            return 2
        say(f"{me}: joined rank 0 at {gang.coordinator}")
        return _serve(line, me, runner, localize, say)
    except (Closed, TimeoutError):
        say(f"{me}: rank 0 at {gang.coordinator} went away")
        return 1
    finally:
        line.close()


def _serve(
    line: Line, me: str, runner: ChildRunner, localize: Localize, say: Callable[[str], None]
) -> int:
    """Run what rank 0 sends until it says done (0), stop or goes away (1)."""
    current: _Run | None = None
    try:
        while True:
            try:
                message = line.receive()
            except Closed:
                running = current is not None and current.is_alive()
                if current is not None:
                    current.end()
                what = "mid-run (its child ended)" if running else ""
                say(f"{me}: rank 0 went away {what}".rstrip())
                return 1
            kind = message["kind"]
            if kind == "run":
                if current is not None:
                    current.join()
                current = _Run(line, message, runner, localize, lambda text: say(f"{me}: {text}"))
                current.start()
            elif kind == "end" and current is not None:
                current.cancel.set()
            elif kind in ("done", "stop"):
                if current is not None:
                    current.end()
                why = message.get("why") or ("the search is over" if kind == "done" else "")
                say(f"{me}: {why}" if kind == "done" else f"{me}: rank 0 stopped: {why}")
                return 0 if kind == "done" else 1
    except BaseException:  # Ctrl-C, SIGTERM: the child goes with this process
        if current is not None:
            current.end()
        raise


class _Run(threading.Thread):
    """One request run in this host's child; its report sent back when it ends."""

    def __init__(
        self,
        line: Line,
        message: dict[str, Any],
        runner: ChildRunner,
        localize: Localize,
        say: Callable[[str], None],
    ) -> None:
        super().__init__(name="tuner-gang-run", daemon=True)
        self.cancel = threading.Event()
        self._line, self._message, self._runner = line, message, runner
        self._localize, self._say = localize, say

    def end(self) -> None:
        """End the child now, and wait until it has ended."""
        self.cancel.set()
        self.join()

    def run(self) -> None:
        started = time.monotonic()
        request: Request | None = None
        try:  # a request this tuner cannot read is reported too: rank 0 waits for every report
            request = decode_request(self._message["request"])
            request, env = self._localize(request, dict(self._message.get("env") or {}))
            with ending_on(self.cancel):
                run = self._runner.run(request, env, float(self._message["timeout_s"]))
        except Exception as exc:  # reported as the rank's run: the leader decides
            error = f"{type(exc).__name__}: {exc}"
            run = ChildRun(returncode=1, result_text=None, stderr_tail=error)
        with contextlib.suppress(Closed):  # rank 0 is gone: the serving loop says so
            self._line.send("ran", run=run_to_plain(run))
        self._say(_described(request, run, self.cancel.is_set(), time.monotonic() - started))


def _described(request: Request | None, run: ChildRun, ended: bool, seconds: float) -> str:
    """``trial run at global batch 256 ok in 12 s``."""
    batch = getattr(request, "global_batch_size", None)
    at = f" at global batch {batch}" if batch is not None else ""
    result = read_result(run.result_text)
    status = getattr(result, "status", None)
    if run.timed_out:
        status = "timed out"
    elif status is None:
        status = "ended by rank 0" if ended else f"died (exit {run.returncode})"
    mode = request.mode if request is not None else "unreadable"
    return f"{mode} run{at} {status} in {seconds:.0f} s"


def _connect(gang: Gang, wait_s: float) -> Line | None:
    """A line to rank 0, tried until ``wait_s`` seconds have passed (``None``: never)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            sock = socket.create_connection(gang.address, timeout=min(5.0, max(wait_s, 0.1)))
        except OSError:
            if time.monotonic() + _RETRY_S > deadline:
                return None
            time.sleep(_RETRY_S)
            continue
        sock.settimeout(None)
        return Line(sock)
