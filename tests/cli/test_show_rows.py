"""``tuner show`` fits the terminal's rows (issue 30: a 30-row terminal): the trials, the answer
and the verdict always; the recommendation's details when they fit, else one line saying where
they are; ``--wide``, or a pipe (which has no rows), prints them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import run_tuner, tuner_env
from test_show_width import wide_study

from tuner.cli.display import DETAILS_HINT

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture
def url(tmp_path: Path) -> str:
    return wide_study(tmp_path)


def show(url: str, cwd: Path, rows: int, *extra: str, terminal: bool = True) -> list[str]:
    env = tuner_env(COLUMNS="80", LINES=str(rows), NO_COLOR="1")
    if terminal:
        env["TTY_COMPATIBLE"] = "1"  # rich: a terminal of COLUMNS x LINES
    result = run_tuner("show", "--storage", url, "--study-name", "wide", *extra, cwd=cwd, env=env)
    assert result.returncode == 0, result.stderr
    return [line.rstrip() for line in ANSI.sub("", result.stdout).splitlines()]


def test_a_short_terminal_holds_the_trials_and_the_answer(url: str, tmp_path: Path) -> None:
    lines = show(url, tmp_path, 20)
    assert len(lines) <= 20, "\n".join(lines)
    assert any(line.startswith("Use global batch") for line in lines)
    assert any(line.startswith("verdict: ") for line in lines)
    assert lines[-1] == DETAILS_HINT and "Recommendation" not in lines


@pytest.mark.parametrize(
    ("rows", "extra", "terminal"),
    [(60, (), True), (20, ("--wide",), True), (20, (), False)],
    ids=["tall-terminal", "wide", "pipe"],
)
def test_the_details_where_they_fit_or_are_asked_for(
    url: str, tmp_path: Path, rows: int, extra: tuple[str, ...], terminal: bool
) -> None:
    lines = show(url, tmp_path, rows, *extra, terminal=terminal)
    assert "Recommendation" in lines and DETAILS_HINT not in lines
