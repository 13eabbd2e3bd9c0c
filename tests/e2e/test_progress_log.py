"""A real search logged where stderr is not a terminal (nohup, Slurm, CI): timestamped lines at
each trial's start and end, under the numbers ``tuner show`` lists, with an ETA and the child's
own progress reports; ``-q`` prints none of it. Real TensorFlow on two CPU replicas, real SQLite."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import run_tuner, write_spec

pytestmark = pytest.mark.slow

STAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"
# Enough samples that a trial trains for a few seconds: the child reports about once a second.
ARGS = ("--cpu-replicas", "2", "--no-baseline", "--no-noise-scale")
SAMPLES = 40960


def _matches(pattern: str, text: str) -> list[re.Match[str]]:
    return [m for line in text.splitlines() if (m := re.match(STAMP + " " + pattern, line))]


def _shown_batches(stdout: str) -> dict[int, str]:
    """``#`` -> the row's cells, from the table ``tuner show`` prints."""
    rows = {}
    for line in stdout.splitlines():
        cells = [cell.strip() for cell in line.split("│") if cell.strip()]
        if len(cells) > 2 and cells[0].isdigit():
            rows[int(cells[0])] = " ".join(cells)
    return rows


def test_a_piped_search_logs_numbered_trials_with_eta_and_progress(tmp_path: Path) -> None:
    write_spec(tmp_path / "small.toml", multipliers="[1, 2]", rules='["linear"]')
    spec = ("--spec", "small.toml")
    result = run_tuner(
        "-v",
        "search",
        *spec,
        *ARGS,
        "--train-samples",
        str(SAMPLES),
        "--storage",
        "sqlite:///p.db",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    log = result.stderr

    started = {int(m[1]): m[2] for m in _matches(r"trial (\d+) started: batch (\d+) ", log)}
    ended = _matches(r"trial (\d+) ok: batch (\d+) .* · val loss \S+ · train loss \S+ · (.*)", log)
    assert len(started) == 2, log
    assert {int(m[1]): m[2] for m in ended} == started
    # The ETA: known after the first trial (its duration × the one left), done after the last.
    assert re.fullmatch(r"\d+ s · ETA \d+ s", ended[0][3]), ended[0][0]
    assert ended[-1][3].endswith("· done"), ended[-1][0]
    # In-trial progress, reported by the child: mid-epoch steps and epoch ends, in samples.
    progress = _matches(r"trial (\d+): ([\d,]+)/([\d,]+) samples \(\d+%\)(.*)", log)
    assert {int(m[1]) for m in progress} == set(started), log
    assert any("epoch" not in m[4] for m in progress), "no mid-epoch report from the child"
    assert all(m[3] == f"{SAMPLES:,}" for m in progress)  # whole batches at 256 and at 512
    assert re.search(STAMP + r" \[optuna[\w.]*\] ", log), "-v passes Optuna's own log on"

    shown = run_tuner("show", "--storage", "sqlite:///p.db", "--study-name", "small", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    rows = _shown_batches(shown.stdout)
    assert set(rows) == set(started)
    for number, batch in started.items():
        assert f" {batch} " in rows[number]

    quiet = run_tuner(
        "-q",
        "search",
        *spec,
        *ARGS,
        "--batch-multipliers",
        "1",
        "--study-name",
        "quiet",
        "--storage",
        "sqlite:///p.db",
        cwd=tmp_path,
    )
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""
    assert "Recommendation" in quiet.stdout
