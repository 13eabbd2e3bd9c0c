"""A one-off child's payload (validate, lr-find): ok gives it, a refused workload is the child's
line, anything else names the run, its status and its error."""

from __future__ import annotations

import pytest

from tuner.core.errors import TunerError, WorkloadError
from tuner.core.outcome import ChildRun, ok_payload
from tuner.core.protocol import Result, encode_result


def run_of(result: Result | None, returncode: int = 0, stderr: str = "") -> ChildRun:
    text = encode_result(result) if result is not None else None
    return ChildRun(returncode=returncode, result_text=text, stderr_tail=stderr)


def test_an_ok_run_gives_its_payload() -> None:
    run = run_of(Result(status="ok", payload={"losses": [1.0, 0.5]}))
    assert ok_payload(run, memory_capped=False, failed="the run failed") == {"losses": [1.0, 0.5]}


def test_a_refused_workload_is_the_childs_line() -> None:
    run = run_of(Result(status="invalid", error="m:data: x_train is empty"))
    with pytest.raises(WorkloadError, match=r"^m:data: x_train is empty$"):
        ok_payload(run, memory_capped=False, failed="the run failed")


def test_a_crash_names_the_run_and_its_status() -> None:
    run = run_of(None, returncode=-11, stderr="Fatal Python error: Segmentation fault")
    with pytest.raises(TunerError, match=r"^the range test's run failed \(crashed\): "):
        ok_payload(run, memory_capped=False, failed="the range test's run failed")
