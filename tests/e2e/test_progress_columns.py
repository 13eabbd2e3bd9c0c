"""A real search piped with ``COLUMNS=80``: its plan comes before the first child, the time once
a training has run, and every line of the log fits 80 columns with every number whole (a long
line goes on under itself, broken between its parts). The study stores the machine's load.
Real TensorFlow on two CPU replicas (the baseline on one), real SQLite: :mod:`piped_search`'s
search, shared with ``test_same_training.py`` and ``test_input_reuse_real.py``."""

from __future__ import annotations

import re
from itertools import takewhile
from pathlib import Path

import optuna
import pytest
from piped_search import NAME, piped_search

pytestmark = pytest.mark.slow

STAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d "


@pytest.fixture(scope="module")
def piped(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    return piped_search(tmp_path_factory)


def test_a_piped_search_at_80_columns_plans_first_and_fits(piped: tuple[Path, str]) -> None:
    work, url = piped
    log = (work / "stderr.txt").read_text().splitlines()
    # Every line of the search's progress and notes (the banner, before them, is the CLI's).
    wide = [line for line in log if len(line) > 80 and not re.match(STAMP + "study ", line)]
    assert not wide, "\n".join(wide)
    # The plan, before the workload check's child (the banner says it starts): 1 check, 1
    # baseline run, 4 grid points; the time once the baseline has run.
    plan = next(i for i, line in enumerate(log) if re.match(STAMP + "plan: ", line))
    text = " ".join([log[plan], log[plan + 1]])
    assert "6 trainings: 1 check, 1 baseline, 4 grid;" in text, text
    baseline = next(i for i, line in enumerate(log) if "single-device baseline" in line)
    assert plan < baseline
    left = [line for line in log if re.match(STAMP + "left: ", line)]
    assert left and "≈" in left[0], "\n".join(log)
    # Each trial's end: its record and the lines under it (indented past the timestamp, broken
    # between parts) hold the figures whole; the point that trained as another did shows that
    # one's figures, with no time of its own.
    twins = {int(n) for n in re.findall(r"trial (\d+): same training as #", "\n".join(log))}
    assert len(twins) == 1, "\n".join(log)
    ended = {
        int(found.group(1)): i
        for i, line in enumerate(log)
        if (found := re.match(STAMP + r"trial (\d+) ok: ", line))
    }
    assert len(ended) == 4 and twins < set(ended), "\n".join(log)
    for number, i in ended.items():
        following = takewhile(lambda line: line.startswith(" " * 24), log[i + 1 : i + 4])
        text = " · ".join([log[i], *(line.strip() for line in following)])
        assert re.search(r" [\d,]+ samples/s · ", text), text
        time = "" if number in twins else r"\d+ s · "
        assert re.search(r"val loss \d[\d.e+-]* · train loss \d[\d.e+-]* · " + time, text), text
        assert text.rstrip().endswith(("done", " s", " min")), text
    load = optuna.load_study(study_name=NAME, storage=url).user_attrs["machine_load"]
    assert set(load) == {"load", "cores", "gpu_processes", "busy", "measured_at"}
