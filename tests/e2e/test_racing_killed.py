"""A worker SIGKILLed during a racing repeat, and a search resumed at once, within the heartbeat
grace period: the repeat is still RUNNING (nothing tells a dead worker from a slow one yet), so
the resumed search does not run it a second time and says plainly that the recommendation it
prints is provisional. Real TensorFlow children, real SQLite, a real SIGKILL."""

from __future__ import annotations

import os
import signal

import pytest
from conftest import run_tuner, write_spec
from optuna.trial import TrialState
from procs import descendants, load, start_search, wait_gone, wait_until

from tuner.core.record import decode

pytestmark = pytest.mark.slow


def test_a_resume_within_the_grace_period_calls_the_recommendation_provisional(tmp_path):
    # One configuration: the lone candidate's second run (its interval needs one) is the repeat.
    write_spec(tmp_path / "s.toml", base=256, multipliers="[1]", rules='["none"]', heartbeat=60)
    url = f"sqlite:///{tmp_path}/s.db"
    args = ["--spec", "s.toml", "--storage", url, "--cpu-replicas", "2", "--no-noise-scale",
            "--no-baseline", "--max-repeats", "2"]  # fmt: skip

    def running_repeat() -> list[int]:
        try:
            trials = load(url).get_trials(deepcopy=False, states=(TrialState.RUNNING,))
        except KeyError:  # no study yet
            return []
        return [t.number for t in trials if decode(t).reuse.repeat_of is not None]

    worker = start_search(args, tmp_path)
    assert wait_until(lambda: bool(running_repeat()), within_s=400, poll_s=0.2), (
        worker.poll(),
        worker.stderr.read() if worker.poll() is not None else "",
    )
    (killed,) = running_repeat()
    below = descendants(worker.pid)
    os.kill(worker.pid, signal.SIGKILL)
    worker.communicate(timeout=60)
    assert wait_gone(below, within_s=60)  # its trial child notices and goes

    resumed = run_tuner("search", *args, cwd=tmp_path, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert "Traceback" not in resumed.stderr
    lines = [ln for ln in resumed.stderr.splitlines() if "provisional" in ln]
    assert len(lines) == 1 and f"#{killed} (run 2 of #" in lines[0], resumed.stderr
    assert "heartbeat grace period" in lines[0]
    trials = load(url).get_trials(deepcopy=False)
    assert trials[killed].state == TrialState.RUNNING  # not run a second time meanwhile
