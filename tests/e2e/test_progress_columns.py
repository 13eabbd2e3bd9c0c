"""A real search piped with ``COLUMNS=80``: its plan comes before the first child, the time once
a training has run, and every line of the log fits 80 columns with every number whole (a long
line goes on under itself, broken between its parts). The study stores the machine's load.
Real TensorFlow on two CPU replicas (the baseline on one), real SQLite."""

from __future__ import annotations

import re
from pathlib import Path

import optuna
import pytest
from conftest import run_tuner, tuner_env, write_spec

pytestmark = pytest.mark.slow

STAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d "


def test_a_piped_search_at_80_columns_plans_first_and_fits(tmp_path: Path) -> None:
    write_spec(tmp_path / "small.toml", multipliers="[1, 2]", rules='["linear"]')
    result = run_tuner(
        "search",
        "--spec",
        "small.toml",
        "--cpu-replicas",
        "2",
        "--no-noise-scale",
        "--baseline",
        "--storage",
        "sqlite:///c.db",
        cwd=tmp_path,
        env=tuner_env(COLUMNS="80"),
    )
    assert result.returncode == 0, result.stderr
    log = result.stderr.splitlines()
    # Every line of the search's progress and notes (the banner, before them, is the CLI's).
    wide = [line for line in log if len(line) > 80 and not re.match(STAMP + "study ", line)]
    assert not wide, "\n".join(wide)
    # The plan, before the workload check's child (the banner says it starts): 1 check, 1
    # baseline run, 2 grid points; the time once the baseline has run.
    plan = next(i for i, line in enumerate(log) if re.match(STAMP + "plan: ", line))
    text = " ".join([log[plan], log[plan + 1]])
    assert "4 trainings: 1 check, 1 baseline, 2 grid;" in text, text
    baseline = next(i for i, line in enumerate(log) if "single-device baseline" in line)
    assert plan < baseline
    left = [line for line in log if re.match(STAMP + "left: ", line)]
    assert left and "≈" in left[0], "\n".join(log)
    # Each trial's end: its record and the lines under it (indented past the timestamp, broken
    # between parts) hold the figures whole.
    ended = [i for i, line in enumerate(log) if re.match(STAMP + r"trial \d+ ok: ", line)]
    assert len(ended) == 2, "\n".join(log)
    for i in ended:
        following = [line for line in log[i + 1 : i + 4] if line.startswith(" " * 24)]
        text = " · ".join([log[i], *(line.strip() for line in following)])
        assert re.search(r" [\d,]+ samples/s · ", text), text
        assert re.search(r"val loss \d[\d.e+-]* · train loss \d[\d.e+-]* · \d+ s · ", text), text
        assert text.rstrip().endswith(("done", " s", " min")), text
    study = optuna.load_study(study_name="small", storage=f"sqlite:///{tmp_path / 'c.db'}")
    load = study.user_attrs["machine_load"]
    assert set(load) == {"load", "cores", "gpu_processes", "busy", "measured_at"}
