"""The gang's transport with a fake inner runner: rank 0's Leader and GangRunner, and follow(),
on localhost sockets in threads (issue 47)."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from types import SimpleNamespace

import pytest
from procs import free_port_pair

from tuner.core.devices import DevicePlan
from tuner.core.errors import ConfigError, TunerError
from tuner.core.gang import Gang
from tuner.core.outcome import ChildRun
from tuner.core.protocol import Request, Result, encode_result
from tuner.core.spec import spec_from_dict
from tuner.driver.children import cancel_event, trial_request, workload_ref
from tuner.driver.gang import GangRunner, Leader, follow, hello, own_copy

PLAN = DevicePlan(kind="cpu", num_replicas=4, backend="jax", hosts=2)


def _ok(status: str = "ok") -> ChildRun:
    return ChildRun(returncode=0, result_text=encode_result(Result(status=status, payload={})))


class Fake:
    """An inner runner: ``outcome`` after ``seconds``, ended early when its cancel event is set."""

    def __init__(self, outcome: ChildRun, seconds: float = 0.0) -> None:
        self.outcome, self.seconds = outcome, seconds
        self.seen: list[Request] = []
        self.ended = threading.Event()

    def run(self, request, env, timeout_s, on_event=None):  # type: ignore[no-untyped-def]
        self.seen.append(request)
        cancel = cancel_event() or threading.Event()
        if cancel.wait(self.seconds):
            self.ended.set()
            return ChildRun(returncode=-9, result_text=None, stderr_tail="killed")
        return self.outcome


@pytest.fixture
def setup():  # type: ignore[no-untyped-def]
    spec = spec_from_dict(None)
    gang = Gang(hosts=2, rank=0, coordinator=f"127.0.0.1:{free_port_pair()}")
    workload = workload_ref(spec)
    return SimpleNamespace(
        gang=gang, workload=workload, request=trial_request(spec, PLAN, 256, 0.01)
    )


def _follower(gang, workload, inner, lines, wait_s=5.0):  # type: ignore[no-untyped-def]
    me = replace(gang, rank=1)
    found: dict[str, int] = {}

    def run() -> None:
        localize = lambda r, e: own_copy(r, e, PLAN, workload)  # noqa: E731
        found["code"] = follow(
            me, hello(1, 2, PLAN, workload), inner, localize, wait_s, lines.append
        )

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, found


def test_happy_path_every_rank_runs_its_seat(setup) -> None:  # type: ignore[no-untyped-def]
    gang, workload, request = setup.gang, setup.workload, setup.request
    lines: list[str] = []
    leader = Leader(gang, hello(0, 2, PLAN, workload), lines.append)
    thread, found = _follower(gang, workload, (theirs := Fake(_ok())), lines)
    leader.ready(5)
    ours = Fake(_ok())
    run = GangRunner(ours, leader, 5).run(request, PLAN.child_environment(), 30)
    assert run == ours.outcome
    assert ours.seen[0].gang.process_id == 0  # type: ignore[union-attr]
    seat = theirs.seen[0].gang  # type: ignore[union-attr]
    assert (seat.process_id, seat.address) == (1, f"127.0.0.1:{gang.address[1] + 1}")
    leader.close("done")
    thread.join(5)
    assert found["code"] == 0
    assert any("trial run at global batch 256 ok" in line for line in lines), lines


def test_a_failed_follower_ends_rank_0s_child(setup) -> None:  # type: ignore[no-untyped-def]
    gang, workload, request = setup.gang, setup.workload, setup.request
    lines: list[str] = []
    leader = Leader(gang, hello(0, 2, PLAN, workload), lines.append)
    thread, found = _follower(gang, workload, Fake(_ok("oom")), lines)
    ours = Fake(_ok(), seconds=30)
    started = time.monotonic()
    run = GangRunner(ours, leader, 5).run(request, {}, 60)
    assert time.monotonic() - started < 5 and ours.ended.is_set()
    assert run.rank == "rank 1 of 2"  # the cause, not rank 0's ended child
    assert "oom" in (run.result_text or "")
    leader.close("stop", "interrupted")
    thread.join(5)
    assert found["code"] == 1 and "rank 0 stopped: interrupted" in lines[-1]


def test_rank_0_failing_ends_the_followers_child(setup) -> None:  # type: ignore[no-untyped-def]
    gang, workload, request = setup.gang, setup.workload, setup.request
    leader = Leader(gang, hello(0, 2, PLAN, workload), lambda line: None)
    theirs = Fake(_ok(), seconds=30)
    thread, _ = _follower(gang, workload, theirs, [])
    run = GangRunner(Fake(_ok("oom")), leader, 5).run(request, {}, 60)
    assert theirs.ended.wait(5)
    assert "oom" in (run.result_text or "") and run.rank == "rank 0 of 2"
    leader.close()
    thread.join(5)


def test_a_follower_that_never_comes(setup) -> None:  # type: ignore[no-untyped-def]
    gang, workload, request = setup.gang, setup.workload, setup.request
    leader = Leader(gang, hello(0, 2, PLAN, workload), lambda line: None)
    started = time.monotonic()
    with pytest.raises(TunerError, match=r"rank\(s\) 1 of 2 did not join at 127.0.0.1:\d+ within"):
        GangRunner(Fake(_ok()), leader, 0.3).run(request, {}, 60)
    assert time.monotonic() - started < 2
    leader.close()


def test_no_leader_one_line_and_exit_1(setup) -> None:  # type: ignore[no-untyped-def]
    gang, workload, _request = setup.gang, setup.workload, setup.request
    lines: list[str] = []
    started = time.monotonic()
    thread, found = _follower(gang, workload, Fake(_ok()), lines, wait_s=0.6)
    thread.join(5)
    assert found["code"] == 1 and time.monotonic() - started < 3
    assert len(lines) == 1 and lines[0].startswith(f"rank 1/2: no rank 0 at {gang.coordinator} ")


def test_a_mismatched_follower_is_refused_on_both_sides(setup) -> None:  # type: ignore[no-untyped-def]
    gang, workload, _request = setup.gang, setup.workload, setup.request
    leader_lines: list[str] = []
    leader = Leader(gang, hello(0, 2, replace(PLAN, num_replicas=2), workload), leader_lines.append)
    lines: list[str] = []
    thread, found = _follower(gang, workload, Fake(_ok()), lines)
    thread.join(5)
    assert found["code"] == 2 and "devices per host" in lines[-1]
    with pytest.raises(ConfigError, match="devices per host"):
        leader.ready(1)
    assert "devices per host" in leader_lines[-1]
    leader.close()


def test_the_leader_vanishing_mid_run(setup) -> None:  # type: ignore[no-untyped-def]
    gang, workload, request = setup.gang, setup.workload, setup.request
    leader = Leader(gang, hello(0, 2, PLAN, workload), lambda line: None)
    theirs = Fake(_ok(), seconds=30)
    lines: list[str] = []
    thread, found = _follower(gang, workload, theirs, lines)
    for line in leader.ready(5).values():
        line.send(
            "run",
            request=__import__("tuner.core.protocol").core.protocol.encode_request(request),
            env={},
            timeout_s=60,
        )
        time.sleep(0.2)
        line.close()  # rank 0 gone, no word
    thread.join(5)
    assert found["code"] == 1 and theirs.ended.is_set()
    assert lines[-1] == "rank 1/2: rank 0 went away mid-run (its child ended)"
    leader.close()


def test_own_copy_takes_this_hosts_memory_cap(setup) -> None:  # type: ignore[no-untyped-def]
    _gang, workload, request = setup.gang, setup.workload, setup.request
    mine = replace(PLAN, memory_limit_bytes=1 << 30)
    env = {**PLAN.child_environment(), "EXTRA": "1"}
    copy, copied_env = own_copy(request, env, mine, workload)
    assert copy.plan.memory_limit_bytes == 1 << 30  # type: ignore[union-attr]
    assert copied_env["EXTRA"] == "1" and copied_env == {**mine.child_environment(), "EXTRA": "1"}
