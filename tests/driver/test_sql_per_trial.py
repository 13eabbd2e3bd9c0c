"""The driver's SQL per trial, counted on a real SQLite study with the instant stand-in child
(every child answered at once in the driver, so each statement is the driver's own): the grid
sampler picks from the list the trial loop just read (no read of its own: 7 statements a trial
fewer), and dead workers' trials are looked for once a step, by the trial loop as the trial
starts (not also by the loop: 2 fewer). The points run are the grid's, once each, by ascending
batch, as before. (The itemised count is in benchmarks/RESULTS.md; on PostgreSQL through
benchmarks/driver_scaling.py.)"""

from __future__ import annotations

import collections
import traceback
from collections.abc import Iterator
from pathlib import Path

import optuna
import pytest
import sqlalchemy
from fake_child import PLAN, make_spec
from sqlalchemy.engine import Engine

from tuner.driver import study as study_module
from tuner.driver.children._instant import InstantRunner
from tuner.driver.study import run_search

POINTS = 16  # batches 64 x 1..8, rules none and linear
CALLERS = ("_get_unvisited_grid_ids", "fail_stale_trials")


@pytest.fixture
def statements() -> Iterator[collections.Counter[str]]:
    """Every statement any engine runs meanwhile, counted by the caller of :data:`CALLERS` it
    ran under (``other`` for the rest)."""
    counts: collections.Counter[str] = collections.Counter()

    def count(*_: object) -> None:
        names = {frame.name for frame in traceback.extract_stack()}
        counts[next((c for c in CALLERS if c in names), "other")] += 1

    sqlalchemy.event.listen(Engine, "before_cursor_execute", count)
    yield counts
    sqlalchemy.event.remove(Engine, "before_cursor_execute", count)


def test_the_grid_sampler_reads_nothing_and_the_stale_check_runs_once_a_step(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    statements: collections.Counter[str],
) -> None:
    monkeypatch.setattr(study_module, "refresh", lambda study, warn=None: None)
    checks = []
    stale_check = optuna.storages.fail_stale_trials
    monkeypatch.setattr(
        optuna.storages, "fail_stale_trials", lambda study: checks.append(stale_check(study))
    )
    spec = make_spec(tuple(range(1, POINTS // 2 + 1)))
    report = run_search(
        spec, PLAN, f"sqlite:///{tmp_path / 's.db'}", runner=InstantRunner(), baseline=False
    )
    trials = sorted(report.study.get_trials(), key=lambda t: t.number)
    points = [(t.params["global_batch_size"], t.params["lr_rule"]) for t in trials]
    assert len(points) == POINTS and len(set(points)) == POINTS  # each point once
    assert [batch for batch, _ in points] == sorted(batch for batch, _ in points)
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in trials)

    assert statements["_get_unvisited_grid_ids"] == 0
    # One check a trial (the loop's, as it starts), one as the search starts, one as the loop ends.
    assert len(checks) == POINTS + 2
    # Each check is 2 statements here (the stale ids, no trial to fail); before: 2 a step more.
    assert statements["fail_stale_trials"] == 2 * len(checks)
