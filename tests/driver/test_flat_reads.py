"""The driver's storage work per trial stays flat as the grid grows (issue 19): a whole search
with the instant stand-in (``TUNER_TEST_INSTANT_TRIALS=1``) on a real SQLite file, 10 and then
100 grid points, counting what the loop asks of the storage. No timing: counts.

* reads of the study's trials (``get_all_trials``) per trial: constant;
* trials rebuilt from database rows per trial: constant (Optuna's trial cache holds the finished
  ones; a loop that bypassed it would rebuild every trial on every step);
* value-by-value grid comparisons: none (Optuna's grid sampler compares every stored trial's
  grid after each trial; tuner's sampler answers equal grids at once);
* run keys built to find trials to re-queue: none while no trial needs it;
* trials looked at to decide whether grid points are left (``grid_point`` in
  :mod:`tuner.core.trials`) per trial: constant (:class:`~tuner.core.trials.GridProgress`
  remembers finished trials; a rescan per trial would grow with the study).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from fake_child import PLAN, make_spec
from optuna.samplers import GridSampler
from optuna.storages import RDBStorage, _CachedStorage
from optuna.trial import TrialState

from tuner.core import trials as core_trials
from tuner.driver.children import _instant as instant
from tuner.driver.study import run_search

pytestmark = pytest.mark.slow  # about 100 trials through a real SQLite file


def _count(monkeypatch: pytest.MonkeyPatch, counts: Counter[str]) -> None:
    """Count the calls (and rows read) that matter, without changing what they do."""
    reads, rows = _CachedStorage.get_all_trials, RDBStorage._get_trials
    compare, run_key = GridSampler._grid_value_equal, core_trials.run_key
    point = core_trials.grid_point

    def get_all_trials(self: Any, *args: Any, **kwargs: Any) -> Any:
        counts["get_all_trials"] += 1
        return reads(self, *args, **kwargs)

    def get_trials(self: Any, *args: Any, **kwargs: Any) -> Any:
        found = rows(self, *args, **kwargs)
        counts["rows"] += len(found)
        return found

    def grid_value_equal(a: Any, b: Any) -> bool:
        counts["grid_value_equal"] += 1
        return compare(a, b)

    def count_run_key(trial: Any) -> Any:
        counts["run_key"] += 1
        return run_key(trial)

    def count_grid_point(trial: Any) -> Any:
        counts["grid_point"] += 1
        return point(trial)

    monkeypatch.setattr(core_trials, "run_key", count_run_key)
    monkeypatch.setattr(core_trials, "grid_point", count_grid_point)
    monkeypatch.setattr(_CachedStorage, "get_all_trials", get_all_trials)
    monkeypatch.setattr(RDBStorage, "_get_trials", get_trials)
    monkeypatch.setattr(GridSampler, "_grid_value_equal", staticmethod(grid_value_equal))


def _search(tmp_path, monkeypatch: pytest.MonkeyPatch, points: int) -> dict[str, float]:
    """Counts per trial of a stand-in search of ``points`` grid points."""
    counts: Counter[str] = Counter()
    with monkeypatch.context() as patch:
        patch.setenv(instant.INSTANT_ENV, "1")
        _count(patch, counts)
        spec = make_spec(tuple(range(1, points // 2 + 1)))
        report = run_search(spec, PLAN, f"sqlite:///{tmp_path}/flat-{points}.db")
    trials = report.study.get_trials()
    assert len(trials) == points and {t.state for t in trials} == {TrialState.COMPLETE}
    return {
        key: counts[key] / points
        for key in ("get_all_trials", "rows", "grid_value_equal", "run_key", "grid_point")
    }


def test_storage_reads_per_trial_stay_flat_from_10_to_100_points(tmp_path, monkeypatch):
    small = _search(tmp_path, monkeypatch, 10)
    large = _search(tmp_path, monkeypatch, 100)
    # Fixed costs (opening, the end's views) weigh more at 10 points: linear growth per trial
    # would show as about 10 times; flat stays at or under 1.
    assert large["get_all_trials"] <= 1.5 * small["get_all_trials"], (small, large)
    assert large["rows"] <= 1.5 * small["rows"], (small, large)
    assert large["grid_point"] <= 1.5 * small["grid_point"], (small, large)
    assert small["grid_value_equal"] == large["grid_value_equal"] == 0
    assert small["run_key"] == large["run_key"] == 0
