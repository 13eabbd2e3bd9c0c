"""The workload check's warning that a crossentropy expecting probabilities is given logits
(issue 45, item 6) is said once, before the grid, and the search goes on (fake runner, no
child; the child's decision: ``tests/worker/test_keras_objects.py``)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
from child_results import result_text
from fake_child import PLAN, inspected, make_spec

from tuner.core.outcome import ChildRun
from tuner.driver.setup import workload_check

LINE = (
    "the loss 'sparse_categorical_crossentropy' expects probabilities, but the model's outputs "
    "on a sample batch are not (values from -1.2 to 2.5, outside [0, 1]): ..."
)


class Warning:
    """A runner whose workload check found logits under a probabilistic loss."""

    def run(
        self,
        request: Any,
        env: dict[str, str],
        timeout_s: float,
        on_event: Callable[[Any], None] | None = None,
    ) -> ChildRun:
        return ChildRun(
            returncode=0, result_text=result_text({**inspected(), "loss_warning": LINE})
        )


def test_the_check_says_the_loss_warning_once_and_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="tuner"):
        info = workload_check.check(make_spec((1, 2)), PLAN, runner=Warning())
    assert info["loss_warning"] == LINE
    assert [r.getMessage() for r in caplog.records] == [LINE]
