"""The workload check and the input checks before a search, with a fake runner (no child)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_child import PLAN, FakeChild, inspected, make_spec, ok

from tuner.cli.errors import exit_code
from tuner.core.devices import DevicePlan
from tuner.core.errors import ConfigError, TunerError, WorkloadError
from tuner.core.outcome import ChildRun
from tuner.driver import preflight
from tuner.driver.study import run_search


def answer(monkeypatch: pytest.MonkeyPatch, run: ChildRun) -> list[dict[str, Any]]:
    """Make every child leave ``run``; return the requests it was sent."""
    requests: list[dict[str, Any]] = []

    def fake(request: dict[str, Any], env: dict[str, str], timeout_s: float) -> ChildRun:
        requests.append(request)
        return run

    monkeypatch.setattr(preflight, "run_child", fake)
    return requests


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
    monkeypatch: pytest.MonkeyPatch, text: str, shown: str
) -> None:
    answer(monkeypatch, ChildRun(returncode=0, result_text=text))
    with pytest.raises(TunerError) as raised:
        preflight.inspect_workload(make_spec())
    assert not isinstance(raised.value, ConfigError)  # the user's input is not at fault
    assert str(raised.value) == (
        f"the workload check (exit code 0) left a result that is not a JSON object: {shown}"
    )
    assert exit_code(raised.value) == 1


def test_a_long_garbage_result_is_cut_to_one_short_line(monkeypatch: pytest.MonkeyPatch) -> None:
    answer(monkeypatch, ChildRun(returncode=3, result_text="garbage\n" * 200))
    with pytest.raises(TunerError, match=r"^the workload check \(exit code 3\)") as raised:
        preflight.inspect_workload(make_spec())
    message = str(raised.value)
    assert "\n" not in message and len(message) < 200


def test_a_result_without_the_sizes_is_a_runtime_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    partial = {k: v for k, v in inspected().items() if k not in ("n_train", "parameters")}
    answer(monkeypatch, ChildRun(returncode=0, result_text=json.dumps(partial)))
    with pytest.raises(TunerError) as raised:
        preflight.inspect_workload(make_spec())
    assert not isinstance(raised.value, ConfigError)
    assert str(raised.value) == "the workload check's result lacks n_train, parameters"


def test_a_workload_the_child_refused_is_bad_input(monkeypatch: pytest.MonkeyPatch) -> None:
    refused = {"status": "invalid", "error": "model x does not fit data y"}
    requests = answer(monkeypatch, ChildRun(returncode=0, result_text=json.dumps(refused)))
    with pytest.raises(WorkloadError, match=r"^model x does not fit data y$") as raised:
        preflight.inspect_workload(make_spec())
    assert exit_code(raised.value) == 2
    assert requests[0]["mode"] == "inspect"
    assert requests[0]["workload"]["model"] == "tuner.workloads.regression:build_model"


def test_no_result_at_all_names_the_exit_code_and_the_last_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answer(monkeypatch, ChildRun(returncode=1, result_text=None, stderr_tail="a\nImportError: x\n"))
    with pytest.raises(WorkloadError) as raised:
        preflight.inspect_workload(make_spec())
    assert str(raised.value) == "loading the workload failed (exit code 1): ImportError: x"


def test_garbage_from_the_check_leaves_the_storage_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answer(monkeypatch, ChildRun(returncode=0, result_text="not json"))
    with pytest.raises(TunerError, match="not a JSON object"):
        run_search(make_spec(), PLAN, f"sqlite:///{tmp_path / 'never.db'}")
    assert not (tmp_path / "never.db").exists()


def test_a_grid_that_does_not_split_over_the_replicas_is_refused_before_any_child(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    child = FakeChild(lambda request: ok(64)).install(monkeypatch)
    with pytest.raises(ConfigError, match="global batch 64 does not divide by 3 replicas"):
        preflight.check(make_spec(), DevicePlan(kind="cpu", num_replicas=3))
    assert child.requests == []


def test_a_batch_larger_than_the_training_set_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    FakeChild(lambda request: ok(64)).install(monkeypatch)
    with pytest.raises(ConfigError, match=r"global batch 8192 is larger than the training set"):
        preflight.check(make_spec((1, 128)), PLAN)
