"""The probe's children from the driver's side (fake children, real search): one child runs
sizes until an out-of-memory, a fresh one goes on, and a child killed by a signal leaves the
size it announced out of memory under a cap, a failure without one."""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

import pytest
from child_results import result_text
from fake_child import N_TRAIN, PLAN, FakeChild, make_spec, ok

from tuner.core.devices import DevicePlan
from tuner.core.errors import TunerError
from tuner.core.outcome import ChildRun
from tuner.core.probe import search_from_state
from tuner.core.protocol import Event, ProbeAttemptEvent, ProbeResultEvent
from tuner.driver.setup.probing import run_probe

CAPPED = DevicePlan(kind="cpu", num_replicas=2, memory_limit_bytes=128 * 2**20)
GRID = (64, 128, 256, 512)


def oom_from(limit: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def trial(request: dict[str, Any]) -> dict[str, Any]:
        batch = request.global_batch_size
        return ok(batch) if batch < limit else {"status": "oom", "error": "OOM"}

    return trial


def test_one_child_tries_every_size_up_to_the_first_oom() -> None:
    child = FakeChild(oom_from(256))
    notes: list[str] = []
    found = run_probe(make_spec(), PLAN, N_TRAIN, runner=child, grid=GRID, note=notes.append)
    assert (found["largest_fitting_batch"], found["smallest_oom_batch"]) == (128, 256)
    assert found["launches"] == 1 == len(child.launched("probe"))
    assert [(a["batch"], a["fits"]) for a in found["attempts"]] == [(128, True), (256, False)]
    assert notes == ["probe: global batch 128 fits", "probe: global batch 256 out of memory"]


def test_a_fresh_child_goes_on_after_an_oom() -> None:
    child = FakeChild(oom_from(128))
    found = run_probe(make_spec(), PLAN, N_TRAIN, runner=child, grid=GRID)
    # 128 runs out of memory in the first child; the second starts from what it found.
    assert [(a["batch"], a["fits"]) for a in found["attempts"]] == [(128, False), (64, True)]
    assert found["launches"] == 2
    second = child.requests[-1].probe_search
    assert search_from_state(second).fits == {128: False}


class Killed:
    """A probe child that announces its sizes and is killed by ``signal`` at ``batch``."""

    def __init__(self, batch: int, sig: signal.Signals, capacity: int = 10**9) -> None:
        self.batch, self.sig, self.capacity = batch, sig, capacity
        self.children = 0

    def run(
        self,
        request: dict[str, Any],
        env: dict[str, str],
        timeout_s: float,
        on_event: Callable[[Event], None] | None = None,
    ) -> ChildRun:
        assert on_event is not None
        self.children += 1
        search = search_from_state(request.probe_search)
        attempts = []
        while (batch := search.next_batch()) is not None:
            on_event(ProbeAttemptEvent(batch))
            if batch == self.batch:
                return ChildRun(returncode=-self.sig, result_text=None, stderr_tail="", wall_s=1)
            fits = batch <= self.capacity
            attempts.append({"batch": batch, "fits": fits, "seconds": 0.1})
            on_event(ProbeResultEvent(batch, fits, 0.1))
            search.record(batch, fits)
            if not fits or len(attempts) == request.probe_sizes_per_child:
                break
        result = {"status": "ok", "probe": True, "attempts": attempts}
        return ChildRun(returncode=0, result_text=result_text(result), wall_s=1)


@pytest.mark.parametrize("sig", [signal.SIGABRT, signal.SIGKILL, signal.SIGSEGV])
def test_a_child_killed_by_a_signal_under_a_cap_leaves_its_size_infeasible(
    sig: signal.Signals,
) -> None:
    killed = Killed(batch=256, sig=sig)
    notes: list[str] = []
    found = run_probe(make_spec(), CAPPED, N_TRAIN, runner=killed, grid=GRID, note=notes.append)
    # 128 fits (one size per child under a cap), 256 kills the second child; nothing is left.
    assert [(a["batch"], a["fits"]) for a in found["attempts"]] == [(128, True), (256, False)]
    assert (found["largest_fitting_batch"], found["smallest_oom_batch"]) == (128, 256)
    assert found["launches"] == killed.children == 2
    assert sig.name in found["attempts"][-1]["error"] and sig.name in notes[-1]


def test_after_a_signal_a_fresh_child_goes_on() -> None:
    killed = Killed(batch=128, sig=signal.SIGABRT)
    found = run_probe(make_spec(), CAPPED, N_TRAIN, runner=killed, grid=GRID)
    assert [(a["batch"], a["fits"]) for a in found["attempts"]] == [(128, False), (64, True)]
    assert found["launches"] == killed.children == 2


def test_a_signal_without_a_cap_is_a_failure() -> None:
    killed = Killed(batch=256, sig=signal.SIGSEGV)
    with pytest.raises(TunerError, match="probe run at global batch 256 failed \\(crashed\\)"):
        run_probe(make_spec(), PLAN, N_TRAIN, runner=killed, grid=GRID)


def test_under_a_memory_cap_each_size_gets_a_fresh_child() -> None:
    child = FakeChild(oom_from(256))
    found = run_probe(make_spec(), CAPPED, N_TRAIN, runner=child, grid=GRID)
    assert [(a["batch"], a["fits"]) for a in found["attempts"]] == [(128, True), (256, False)]
    assert found["launches"] == 2 == len(child.launched("probe"))
    assert {r.probe_sizes_per_child for r in child.requests if r.mode == "probe"} == {1}
