"""``tuner search --validate``: the validation's verdict decides whether the study starts (the
real validation children: tests/driver/test_validate.py and tests/cli/test_cli_errors.py, whose
``raising_data`` case fails in validate's first child)."""

from __future__ import annotations

from typing import Any

import pytest
from fake_child import PLAN, make_spec

from tuner.core.errors import TunerError
from tuner.driver import search as search_module
from tuner.driver.options import SearchOptions
from tuner.driver.validate import run as driver_validate


class Front:
    """What the search says, in order."""

    def __init__(self) -> None:
        self.said: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: self.said.append(name)


@pytest.mark.parametrize("passed", [True, False])
def test_a_failed_validation_stops_the_search_before_it_starts(
    monkeypatch: pytest.MonkeyPatch, passed: bool
) -> None:
    monkeypatch.setattr(driver_validate, "run_validation", lambda *a, **k: {"passed": passed})
    front = Front()
    options = SearchOptions(validate=True)
    if passed:
        search_module._before_trials(make_spec(), PLAN, options, front, runner=None)  # type: ignore[arg-type]
        assert front.said == ["note", "validated", "starting"]
    else:
        with pytest.raises(TunerError, match="validation failed; the study was not started"):
            search_module._before_trials(make_spec(), PLAN, options, front, runner=None)  # type: ignore[arg-type]
        assert front.said == ["note", "validated"]  # never said it starts
