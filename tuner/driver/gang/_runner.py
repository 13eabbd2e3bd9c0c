"""A trial across hosts, from rank 0: :class:`GangRunner` sends each follower its copy of the
request, runs rank 0's own, and ends every rank's child as soon as one rank's fails; the run
that stands for them all is :func:`tuner.core.gang.combine`'s."""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import replace
from typing import cast

from tuner.core.gang import combine, run_status
from tuner.core.outcome import ChildRun
from tuner.core.protocol import GangSeat, Request, RunRequest, encode_request
from tuner.driver.children import ChildRunner, OnEvent, ending_on
from tuner.driver.gang._leader import Leader, wait_until
from tuner.driver.gang._wire import Closed, Line, run_from_plain

REPORT_GRACE_S = 30.0
"""A follower's report may come this long after the trial timeout (its child's kill, the wire)."""
RUNTIME_JOIN_S = 120.0
"""The most a rank's child waits for the others at the trial's distributed runtime."""
FINE = ("ok", "diverged", "dominated")
"""A rank that ends so ends no other: every rank decides these from the same loss."""


class GangRunner:
    """A :class:`~tuner.driver.children.ChildRunner` for rank 0 of a gang: a run whose plan spans
    hosts runs on every rank (``inner`` runs rank 0's); any other (the workload check, the
    single-device baseline) runs here only. Waits ``join_wait_s`` for a rank that is away."""

    def __init__(self, inner: ChildRunner, leader: Leader, join_wait_s: float) -> None:
        self.inner = inner
        self.leader = leader
        self.join_wait_s = join_wait_s

    def run(
        self,
        request: Request,
        env: dict[str, str],
        timeout_s: float,
        on_event: OnEvent | None = None,
    ) -> ChildRun:
        if not isinstance(request, RunRequest) or request.plan.hosts == 1:
            return self.inner.run(request, env, timeout_s, on_event)
        lines = self.leader.ready(self.join_wait_s)
        trial = _Trial(self.leader, lines, time.monotonic() + timeout_s + REPORT_GRACE_S)
        join_s = min(timeout_s, RUNTIME_JOIN_S)
        address = self.leader.gang.runtime_address
        for rank, line in lines.items():
            seat = GangSeat(process_id=rank, address=address, join_timeout_s=join_s)
            text = encode_request(_seated(request, seat))
            try:
                line.send("run", request=text, env=env, timeout_s=timeout_s)
            except Closed:  # away until it joins again: the next run waits for it
                self.leader.drop(rank, line)
                trial.settle(rank, _lost(rank, "its connection dropped before the run"))
        watchers = [
            threading.Thread(target=trial.watch, args=(rank, line), daemon=True)
            for rank, line in lines.items()
            if rank not in trial.runs
        ]
        for watcher in watchers:
            watcher.start()
        own = _seated(request, GangSeat(process_id=0, address=address, join_timeout_s=join_s))
        try:
            with ending_on(trial.cancel):
                run = self.inner.run(own, env, timeout_s, on_event)
        except BaseException:
            trial.end_all()  # Ctrl-C, SIGTERM: no rank's child outlives this one
            raise
        trial.settle(0, run)
        for watcher in watchers:
            watcher.join()
        runs = [trial.runs[rank] for rank in range(self.leader.gang.hosts)]
        aborted = [rank in trial.aborted for rank in range(self.leader.gang.hosts)]
        return combine(runs, aborted)


class _Trial:
    """One trial's ranks: each one's run as it reports, and which were ended for another's."""

    def __init__(self, leader: Leader, lines: dict[int, Line], deadline: float) -> None:
        self.cancel = threading.Event()
        """Set: rank 0's child is ended."""
        self.runs: dict[int, ChildRun] = {}
        self.aborted: set[int] = set()
        self._leader = leader
        self._lines = lines
        self._deadline = deadline
        self._lock = threading.Lock()

    def watch(self, rank: int, line: Line) -> None:
        """Wait for rank ``rank``'s report until the deadline; a rank silent until then, or
        whose connection drops, is lost (its line closed: it ends its child)."""
        try:
            while True:
                message = line.receive(wait_until(self._deadline))
                if message["kind"] == "ran":
                    self.settle(rank, run_from_plain(message.get("run")))
                    return
        except TimeoutError:
            run = _lost(rank, "sent no report within the trial timeout", timed_out=True)
        except Closed as exc:
            run = _lost(rank, f"its connection dropped ({exc})")
        self._leader.drop(rank, line)
        self.settle(rank, run)

    def settle(self, rank: int, run: ChildRun) -> None:
        """Rank ``rank`` has ended with ``run``: when it failed on its own, end all others."""
        with self._lock:
            self.runs[rank] = run
            failed = run_status(run) not in FINE and rank not in self.aborted
        if failed:
            self.end_all()

    def end_all(self) -> None:
        """Tell every rank still running to end its child now."""
        with self._lock:
            running = [rank for rank in [0, *self._lines] if rank not in self.runs]
            running = [rank for rank in running if rank not in self.aborted]
            self.aborted.update(running)
        for rank in running:
            if rank == 0:
                self.cancel.set()
                continue
            with contextlib.suppress(Closed):  # its watcher sees the drop
                self._lines[rank].send("end")


def _lost(rank: int, why: str, *, timed_out: bool = False) -> ChildRun:
    return ChildRun(
        returncode=-1, result_text=None, stderr_tail=f"rank {rank}: {why}", timed_out=timed_out
    )


def _seated(request: RunRequest, seat: GangSeat) -> Request:
    return cast(Request, replace(request, gang=seat))
