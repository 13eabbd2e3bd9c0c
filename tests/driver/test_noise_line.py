"""The one line a search says before the grid when the workload check found that the gradient
noise meter cannot measure (issue 28, part 4): from the check's ``noise_scale_skipped``, once;
never an error (fake runners, no child)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from child_results import result_text
from fake_child import PLAN, FakeChild, inspected, make_spec, ok

from tuner.core.devices import DevicePlan
from tuner.core.outcome import ChildRun
from tuner.core.protocol import InspectRequest
from tuner.driver.setup import workload_check
from tuner.driver.setup.workload_check import noise_line
from tuner.driver.study import run_search

REASON = "the model's own train_step computes its loss, and the model was compiled without a loss"
LINE = f"the gradient noise scale will not be measured: {REASON}"


class Skipping:
    """A runner whose workload check found the meter cannot measure (``REASON``)."""

    def __init__(self) -> None:
        self.requests: list[Any] = []

    def run(
        self,
        request: Any,
        env: dict[str, str],
        timeout_s: float,
        on_event: Callable[[Any], None] | None = None,
    ) -> ChildRun:
        self.requests.append(request)
        found = {**inspected(), "noise_scale_skipped": REASON}
        return ChildRun(returncode=0, result_text=result_text(found))


def test_no_line_when_the_meter_measures() -> None:
    assert noise_line(inspected()) is None
    assert noise_line({**inspected(), "noise_scale_skipped": None}) is None


def test_one_line_with_the_reason() -> None:
    assert noise_line({**inspected(), "noise_scale_skipped": REASON}) == LINE


def test_the_check_warns_once_and_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    runner = Skipping()
    with caplog.at_level(logging.WARNING, logger="tuner"):
        info = workload_check.check(make_spec((1, 2)), PLAN, runner=runner, noise_scale=True)
    assert info["noise_scale_skipped"] == REASON  # passed on, not raised
    assert [r.getMessage() for r in caplog.records] == [LINE]
    (request,) = runner.requests
    assert isinstance(request, InspectRequest) and request.noise_scale is True


def _inspect_request(child: FakeChild) -> InspectRequest:
    (request,) = [r for r in child.requests if isinstance(r, InspectRequest)]
    return request


@pytest.mark.parametrize(
    ("spec_noise", "replicas", "measured"),
    [(True, 2, True), (False, 2, False), (True, 1, False)],
    ids=["on", "off", "one-replica"],
)
def test_a_search_asks_the_check_for_the_meter_only_where_trials_measure(
    tmp_path: Path, spec_noise: bool, replicas: int, measured: bool
) -> None:
    child = FakeChild(lambda request: ok(request.global_batch_size))
    spec = make_spec((1,), noise_scale=spec_noise)
    plan = DevicePlan(kind="cpu", num_replicas=replicas)
    run_search(spec, plan, f"sqlite:///{tmp_path / 's.db'}", runner=child, baseline=False)
    assert _inspect_request(child).noise_scale is measured


def test_the_inspect_request_carries_the_choice_across_the_wire() -> None:
    from tuner.core.protocol import decode_request, encode_request
    from tuner.driver.children import inspect_request

    request = inspect_request(make_spec(), noise_scale=False)
    assert request.noise_scale is False
    assert decode_request(encode_request(request)) == request
    assert inspect_request(make_spec()).noise_scale is True  # the spec's own default
