"""``budget=`` and ``quick=`` from Python and ``--budget`` from the CLI go through the one options
model: a bad budget is one line (exit 2) before anything is written; ``quick`` is the preset an
explicit ``max_repeats``/``seeds`` overrides (no child: the spec is built, not searched)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import invoke_tuner

import tuner
from tuner.core.errors import ConfigError
from tuner.driver.options import SearchOptions, spec_and_plan
from tuner.workloads import regression


def test_a_bad_budget_from_python_is_one_line_and_stores_nothing(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^budget= must be a positive duration such as 90s"):
        tuner.search(
            model=regression.build_model,
            data=regression.load_data,
            storage=f"sqlite:///{tmp_path}/s.db",
            budget="soon",
            quick=True,
        )
    assert list(tmp_path.iterdir()) == []


def test_a_bad_budget_on_the_command_line_is_one_line_exit_2(tmp_path: Path) -> None:
    run = invoke_tuner("search", "--budget", "15x", "--storage", "sqlite:///s.db", cwd=tmp_path)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        "error: --budget must be a positive duration such as 90s, 15m, 1h or 1h30m, got '15x'"
    ]
    assert not (tmp_path / "s.db").exists()


def test_budget_and_quick_reach_the_spec_as_python_gives_them() -> None:
    spec, _, _ = spec_and_plan(SearchOptions(budget="1h30m", quick=True, cpu_replicas=2))
    assert (
        spec.search.decision.budget == 5400
        and spec.search.decision.max_repeats == 1
        and spec.search.decision.seeds == 1
    )
    spec, _, _ = spec_and_plan(SearchOptions(quick=True, max_repeats=2, cpu_replicas=2))
    assert (
        spec.search.decision.max_repeats == 2
        and spec.search.decision.seeds == 1
        and spec.search.decision.budget is None
    )
