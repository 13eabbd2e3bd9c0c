"""The workload check and the input checks before a search
(:mod:`tuner.driver.setup.workload_check`), with a fake runner (no child)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from child_results import result_text
from fake_child import PLAN, FakeChild, inspected, make_spec, ok

from tuner.cli.errors import exit_code
from tuner.core.devices import DevicePlan
from tuner.core.errors import ConfigError, TunerError, WorkloadError
from tuner.core.outcome import ChildRun
from tuner.driver.setup import workload_check
from tuner.driver.study import run_search


class Answer:
    """A runner whose every child leaves ``left``; ``requests``: what it was sent."""

    def __init__(self, left: ChildRun) -> None:
        self.left = left
        self.requests: list[dict[str, Any]] = []
        self.timeouts: list[float] = []

    def run(
        self,
        request: dict[str, Any],
        env: dict[str, str],
        timeout_s: float,
        on_event: Callable[[dict[str, Any]], None] | None = None,
    ) -> ChildRun:
        self.requests.append(request)
        self.timeouts.append(timeout_s)
        return self.left


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("Traceback (most recent call last): {oops", "'Traceback (most recent call last): {oops'"),
        ("[1, 2]", "'[1, 2]'"),
        ('"ok"', "'\"ok\"'"),
    ],
    ids=["not-json", "a-list", "a-string"],
)
def test_a_workload_check_result_that_is_not_a_json_object_is_a_clear_runtime_failure(
    text: str, shown: str
) -> None:
    runner = Answer(ChildRun(returncode=0, result_text=text))
    with pytest.raises(TunerError) as raised:
        workload_check.inspect_workload(make_spec(), runner=runner)
    assert not isinstance(raised.value, ConfigError)  # the user's input is not at fault
    assert str(raised.value) == (
        f"the workload check (exit code 0) left a result that is not a JSON object: {shown}"
    )
    assert exit_code(raised.value) == 1


def test_a_long_garbage_result_is_cut_to_one_short_line() -> None:
    runner = Answer(ChildRun(returncode=3, result_text="garbage\n" * 200))
    with pytest.raises(TunerError, match=r"^the workload check \(exit code 3\)") as raised:
        workload_check.inspect_workload(make_spec(), runner=runner)
    message = str(raised.value)
    assert "\n" not in message and len(message) < 200


def test_a_result_without_the_sizes_is_a_runtime_failure() -> None:
    partial = {k: v for k, v in inspected().items() if k not in ("n_train", "parameters")}
    runner = Answer(ChildRun(returncode=0, result_text=result_text(partial)))
    with pytest.raises(TunerError) as raised:
        workload_check.inspect_workload(make_spec(), runner=runner)
    assert not isinstance(raised.value, ConfigError)
    assert str(raised.value) == "the workload check's result lacks n_train, parameters"


def test_a_workload_the_child_refused_is_bad_input() -> None:
    refused = {"status": "invalid", "error": "model x does not fit data y"}
    runner = Answer(ChildRun(returncode=0, result_text=result_text(refused)))
    requests = runner.requests
    with pytest.raises(WorkloadError, match=r"^model x does not fit data y$") as raised:
        workload_check.inspect_workload(make_spec(), runner=runner)
    assert exit_code(raised.value) == 2
    assert requests[0].mode == "inspect"
    assert requests[0].workload.model == "tuner.workloads.regression:build_model"


def test_no_result_at_all_names_the_exit_code_and_the_last_line() -> None:
    runner = Answer(ChildRun(returncode=1, result_text=None, stderr_tail="a\nImportError: x\n"))
    with pytest.raises(WorkloadError) as raised:
        workload_check.inspect_workload(make_spec(), runner=runner)
    assert str(raised.value) == "loading the workload failed (exit code 1): ImportError: x"


def test_garbage_from_the_check_leaves_the_storage_untouched(tmp_path: Path) -> None:
    runner = Answer(ChildRun(returncode=0, result_text="not json"))
    with pytest.raises(TunerError, match="not a JSON object"):
        run_search(make_spec(), PLAN, f"sqlite:///{tmp_path / 'never.db'}", runner=runner)
    assert not (tmp_path / "never.db").exists()


def test_a_grid_that_does_not_split_over_the_replicas_is_refused_before_any_child() -> None:
    child = FakeChild(lambda request: ok(64))
    with pytest.raises(ConfigError, match="global batch 64 does not divide by 3 replicas"):
        workload_check.check(make_spec(), DevicePlan(kind="cpu", num_replicas=3), runner=child)
    assert child.requests == []


def test_a_batch_larger_than_the_training_set_is_refused() -> None:
    child = FakeChild(lambda request: ok(64))
    with pytest.raises(ConfigError, match=r"global batch 8192 is larger than the training set"):
        workload_check.check(make_spec((1, 128)), PLAN, runner=child)


def test_the_workload_check_runs_under_the_searchs_trial_timeout(tmp_path: Path) -> None:
    runner = Answer(ChildRun(returncode=0, result_text="not json"))
    url = f"sqlite:///{tmp_path / 'never.db'}"
    with pytest.raises(TunerError):
        run_search(make_spec(), PLAN, url, runner=runner, trial_timeout_s=4321.0)
    assert runner.timeouts == [4321.0]  # not a fixed 600 s of its own


def test_a_workload_check_past_the_timeout_says_so_and_names_the_flag() -> None:
    runner = Answer(ChildRun(returncode=-9, result_text=None, timed_out=True, wall_s=30.0))
    with pytest.raises(TunerError) as raised:
        workload_check.inspect_workload(make_spec(), runner=runner, timeout_s=30.0)
    assert str(raised.value) == (
        "the workload check did not finish within 30 s (--trial-timeout): loading the workload "
        "and one training step must fit in it; raise --trial-timeout or load less"
    )
    assert exit_code(raised.value) == 1  # nothing in the input is known to be wrong
