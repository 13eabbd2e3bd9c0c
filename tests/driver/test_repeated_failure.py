"""A failure the configuration does not cause stops the search (issue 28): the same error at two
batches, once the batch sizes a message names are taken out. Two rules failing alike at ONE batch
say that batch fails (issue 45): its other rates are pruned ``batch-failed`` and the search goes
on. The whole rule, through a real search on two replicas, is tests/e2e/test_keras_forms.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fake_child import PLAN, FakeChild, make_spec, ok

from tuner.core.configurations import status_of, without_batch_sizes
from tuner.driver import study as study_module
from tuner.driver.study import run_search

ATTRS = {"global_batch_size": 128, "per_replica_batch_size": 64}


def test_the_batch_sizes_a_message_names_are_taken_out() -> None:
    message = "expected axis -1 to have value 10, but received input with shape (64, 20)"
    assert without_batch_sizes(message, ATTRS) == message.replace("64", "<batch>")
    other = {"global_batch_size": 256, "per_replica_batch_size": 128}
    assert without_batch_sizes(message.replace("64", "128"), other) == without_batch_sizes(
        message, ATTRS
    )


def test_other_numbers_stay() -> None:
    message = "a value 1280 and 12.8 and 128x are not the batch"
    assert without_batch_sizes(message, ATTRS) == message


@pytest.fixture
def no_views(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(study_module, "refresh", lambda study, warn=None: None)


def fails_at_128(request: Any) -> dict[str, Any]:
    """Every rule fails at global batch 128 (a shape its per-replica batch cannot take)."""
    if request.global_batch_size == 128:
        error = "ValueError: cannot reshape tensor of 64 values into shape (3, 21)"
        return {"status": "error", "error": error}
    return ok(request.global_batch_size)


@pytest.mark.usefixtures("no_views")
def test_one_batch_failing_under_two_rules_is_pruned_and_the_search_goes_on(
    tmp_path: Path,
) -> None:
    child = FakeChild(fails_at_128)
    spec = make_spec((1, 2, 4), lr_rules=("none", "linear", "sqrt"))
    report = run_search(spec, PLAN, f"sqlite:///{tmp_path / 'f.db'}", baseline=False, runner=child)
    by = {(t.params["global_batch_size"], t.params["lr_rule"]): t for t in report.study.trials}
    at_128 = sorted((t for (b, _), t in by.items() if b == 128), key=lambda t: t.number)
    assert [status_of(t) for t in at_128] == ["error", "error", "batch-failed"]
    pruned = at_128[2]
    assert pruned.state.name == "PRUNED"
    first, second = at_128[0].number, at_128[1].number
    error = pruned.user_attrs["error"]
    assert f"trials #{first} and #{second} at this batch failed" in error
    assert "cannot reshape tensor" in error
    launched = [r.global_batch_size for r in child.requests if r.mode == "trial"]
    assert launched.count(128) == 2  # the third rate at 128 never started a child
    assert all(status_of(by[(256, rule)]) == "ok" for rule in ("none", "linear", "sqrt"))


@pytest.mark.usefixtures("no_views")
def test_the_same_error_at_a_second_batch_still_stops_the_search(tmp_path: Path) -> None:
    def fails_from_128(request: Any) -> dict[str, Any]:
        if request.global_batch_size >= 128:
            return {"status": "error", "error": f"bad shape ({request.global_batch_size // 2}, 3)"}
        return ok(request.global_batch_size)

    spec = make_spec((1, 2, 4, 8))
    url = f"sqlite:///{tmp_path / 's.db'}"
    with pytest.raises(Exception, match="no point of the grid would train"):
        run_search(spec, PLAN, url, baseline=False, runner=FakeChild(fails_from_128))
