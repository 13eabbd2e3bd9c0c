"""``benchmarks/vs_hand_grid.py --quick``: the reference benchmark end to end on one small
configuration (a real `tuner search` into SQLite, the hand-written grid in its own process): it
prints the walls, the wall ratio, the configuration's throughput ratio, the children tuner ran
and the per-trial phases it read back from the study."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from conftest import TESTS

pytestmark = pytest.mark.slow

SCRIPT = TESTS.parent / "benchmarks" / "vs_hand_grid.py"


def test_the_benchmark_runs_its_quick_mode_and_reads_the_study_back() -> None:
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--reps", "1"],
        cwd=TESTS.parent,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    out = run.stdout
    # The check, one baseline run and the one trial: what --quick asks tuner for.
    assert "(3 children: {'check': 1, 'baseline': 1, 'trials': 1, 'seeds': 0})" in out
    assert re.search(r"wall ratio tuner search / hand: median \d+\.\d{3}", out)
    assert re.search(r"batch +64, rule none +: median \d+\.\d{3}", out)  # tuner's stored value
    phases = dict(re.findall(r"^  (\w+_s) +(\d+\.\d+)$", out, re.MULTILINE))
    assert {"training_s", "tracing_s", "evaluate_s", "import_s", "wall_s"} <= phases.keys()
    assert float(phases["training_s"]) > 0
