"""A workload check that dies without a result is reported by what it said, not by TensorFlow's
logging (fake runner, no child)."""

from __future__ import annotations

import pytest
from fake_child import make_spec

from tuner.core.errors import WorkloadError
from tuner.core.outcome import ChildRun
from tuner.driver.setup import workload_check

TF_LOGGING = (
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
    "I0000 00:00:1796053716.633095   18307 cudart_stub.cc:31] Could not find cuda drivers on "
    "your machine, GPU will not be used.\n"
    "E0000 00:00:1796052698.449849   24763 cuda_platform.cc:52] failed call to cuInit: INTERNAL: "
    "CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)\n"
    "2026-01-01 10:00:00.123456: I tensorflow/core/util/port.cc:113] oneDNN custom operations "
    "are on.\n"
)


class Died:
    """A runner whose workload check exits 7 without a result, having said ``stderr_tail``."""

    def __init__(self, stderr_tail: str) -> None:
        self.stderr_tail = stderr_tail

    def run(
        self, request: object, env: object, timeout_s: float, on_event: object = None
    ) -> ChildRun:
        return ChildRun(returncode=7, result_text=None, stderr_tail=self.stderr_tail)


def died(stderr_tail: str) -> str:
    with pytest.raises(WorkloadError) as raised:
        workload_check.inspect_workload(make_spec(), runner=Died(stderr_tail))
    return str(raised.value)


def test_tensorflows_logging_is_not_the_reason() -> None:
    message = died(TF_LOGGING)
    assert message.startswith("loading the workload failed (exit code 7); it printed nothing ")
    assert "sys.exit or os._exit" in message and "cuda" not in message.lower()


def test_the_last_line_the_workload_said_is_kept() -> None:
    message = died("dataset missing: /data/x\n" + TF_LOGGING)
    assert message == "loading the workload failed (exit code 7): dataset missing: /data/x"
