"""``tuner show`` fits the terminal's rows (issue 30: a 30-row terminal): the trials, the answer
and the verdict always; the recommendation's details when they fit, else one line saying where
they are; ``--wide``, or a pipe (which has no rows), prints them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import run_tuner, tuner_env
from test_show_width import wide_study

from tuner.console.display import DETAILS_HINT

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


def test_the_terminal_names_a_configuration_as_the_note_does(tmp_path: Path) -> None:
    """One number for one configuration in the terminal too: the representative's row lists its
    runs (``runs #0, #2, #3``), and with ``--all`` each other run says ``run 1 of #3``."""
    import optuna
    from trials import measured_trial

    url = f"sqlite:///{tmp_path / 'raced.db'}"
    study = optuna.create_study(
        study_name="raced", storage=url, directions=["minimize", "maximize"]
    )
    study.set_user_attr("spec", {"search": {"base_lr": 0.001, "base_batch_size": 64}})
    runs = [13000.0, 13400.0, 12800.0]
    for trial in [  # batch 64 raced to 3 runs (#2 and #3 repeat #0); batch 128 ran once
        measured_trial(0, 64, "none", runs=runs[:1], loss=0.0062),
        measured_trial(1, 128, "none", runs=[24000.0], loss=0.0065),
        measured_trial(2, 64, "none", runs=runs[:2], loss=0.0062, repeat_of=0, repeat_index=2),
        measured_trial(3, 64, "none", runs=runs, loss=0.0062, repeat_of=0, repeat_index=3),
    ]:
        study.add_trial(trial)
    env = tuner_env(COLUMNS="300", NO_COLOR="1")
    folded = run_tuner("show", "--storage", url, "--wide", cwd=tmp_path, env=env)
    assert folded.returncode == 0, folded.stderr
    assert "runs #0, #2, #3" in folded.stdout and "repeat 3 of #0" not in folded.stdout
    unfolded = run_tuner("show", "--storage", url, "--wide", "--all", cwd=tmp_path, env=env)
    assert "run 1 of #3" in unfolded.stdout and "run 2 of #3" in unfolded.stdout
