"""tuner's grid sampler (:class:`tuner.driver.trial.grid.BatchAscendingGridSampler`) picks the same
grid points as Optuna's ``GridSampler`` on the same ordered grid, at a cost flat in the study's
size: each finished trial is looked at once, each trial's grid attributes are one write, and its
parameters are read from what it assigned, not from the storage. A real SQLite file; counts, no
timing."""

from __future__ import annotations

from collections import Counter
from typing import Any

import optuna
from optuna.samplers import GridSampler

from tuner.driver.trial.grid import BatchAscendingGridSampler
from tuner.storage import open_storage

SPACE = {"global_batch_size": [64 * m for m in range(1, 21)], "lr_rule": ["none", "linear"]}


class OrderedGridSampler(GridSampler):
    """Optuna's own grid sampler on tuner's (batch ascending) order: the reference."""

    def __init__(self, search_space: dict[str, list[Any]], seed: int | None = None) -> None:
        super().__init__(search_space, seed=seed)
        self._all_grids.sort()


def _picks(tmp_path, name: str, sampler: GridSampler, counts: Counter[str]) -> list[tuple]:
    """Grid points of 40 trials, one ``optimize`` call each (as tuner's loop), after 40 trials
    outside the grid so that every pick scans the study (trial numbers past the grid's size)."""
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    storage = open_storage(f"sqlite:///{tmp_path}/{name}.db", create=True)
    study = optuna.create_study(storage=storage, sampler=sampler, study_name=name)
    for _ in range(40):
        study.add_trial(optuna.trial.create_trial(value=1.0))
    reads = storage.get_trial  # under Optuna's trial cache: what reaches the database

    def get_trial(trial_id: int) -> Any:
        counts["get_trial"] += 1
        return reads(trial_id)

    storage.get_trial = get_trial

    def objective(trial: optuna.Trial) -> float:
        trial.suggest_int("global_batch_size", 64, 1280, log=True)
        trial.suggest_categorical("lr_rule", ["none", "linear"])
        return 1.0

    for _ in range(40):
        study.optimize(objective, n_trials=1)
    trials = study.get_trials()[40:]
    return [(t.params["global_batch_size"], t.params["lr_rule"]) for t in trials]


def test_same_points_as_optunas_sampler_each_finished_trial_looked_at_once(tmp_path, monkeypatch):
    counts: Counter[str] = Counter()
    looked = BatchAscendingGridSampler._grid_id

    def grid_id(self: Any, trial: Any) -> Any:
        counts["looked_at"] += 1
        return looked(self, trial)

    monkeypatch.setattr(BatchAscendingGridSampler, "_grid_id", grid_id)
    ours = _picks(tmp_path, "ours", BatchAscendingGridSampler(SPACE, seed=7), counts)
    theirs = _picks(tmp_path, "theirs", OrderedGridSampler(SPACE, seed=7), Counter())
    assert ours == theirs
    grid = [(b, r) for b in SPACE["global_batch_size"] for r in SPACE["lr_rule"]]
    assert sorted(ours) == sorted(grid)
    # 80 trials in the end, 40 picks and 40 end-of-trial checks: each trial once when first seen
    # finished, plus the unfinished ones (the trial being run) at each; a rescan: ~80 × 60.
    assert counts["looked_at"] <= 80 + 4 * 40, counts
    # Per trial: Optuna's own reads (start, tell), none for the two parameters.
    assert counts["get_trial"] == 2 * 40, counts


def test_grid_attributes_are_optunas_two_writes(tmp_path, monkeypatch):
    # Through Optuna's public storage API, as its own GridSampler writes them.
    writes: list[str] = []
    one = optuna.storages.RDBStorage.set_trial_system_attr

    def set_trial_system_attr(self: Any, trial_id: int, key: str, value: Any) -> None:
        writes.append(key)
        one(self, trial_id, key, value)

    monkeypatch.setattr(optuna.storages.RDBStorage, "set_trial_system_attr", set_trial_system_attr)
    _picks(tmp_path, "writes", BatchAscendingGridSampler(SPACE, seed=1), Counter())
    assert writes == ["search_space", "grid_id"] * 40


def test_trials_other_workers_add_are_seen(tmp_path):
    # Two samplers (two workers) on one study, alternating: together they cover the grid once.
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    workers = 2
    url = f"sqlite:///{tmp_path}/shared.db"
    studies = [
        optuna.create_study(
            storage=open_storage(url, create=True),
            sampler=BatchAscendingGridSampler(SPACE, seed=i),
            study_name="shared",
            load_if_exists=True,
        )
        for i in range(workers)
    ]
    for study in studies:  # push trial numbers past the grid: every pick scans the study
        for _ in range(20):
            study.add_trial(optuna.trial.create_trial(value=1.0))

    def objective(trial: optuna.Trial) -> float:
        trial.suggest_int("global_batch_size", 64, 1280, log=True)
        trial.suggest_categorical("lr_rule", ["none", "linear"])
        return 1.0

    for step in range(40):
        studies[step % workers].optimize(objective, n_trials=1)
    points = [
        (t.params["global_batch_size"], t.params["lr_rule"]) for t in studies[0].get_trials()[40:]
    ]
    assert len(points) == 40 and len(set(points)) == 40


def test_optimize_without_a_trial_count_stops_when_the_grid_is_done(tmp_path):
    # As Optuna's GridSampler: a caller that runs study.optimize without n_trials gets the grid
    # once, then the loop ends.
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    storage = open_storage(f"sqlite:///{tmp_path}/stop.db", create=True)
    space = {"global_batch_size": [64, 128, 256], "lr_rule": ["none", "linear"]}
    study = optuna.create_study(storage=storage, sampler=BatchAscendingGridSampler(space))

    def objective(trial: optuna.Trial) -> float:
        trial.suggest_int("global_batch_size", 64, 256, log=True)
        trial.suggest_categorical("lr_rule", ["none", "linear"])
        return 1.0

    study.optimize(objective, timeout=120)
    points = sorted((t.params["global_batch_size"], t.params["lr_rule"]) for t in study.trials)
    assert points == sorted((b, r) for b in space["global_batch_size"] for r in space["lr_rule"])


SWEEP_SPACE = {
    "global_batch_size": [64, 128],
    "lr_rule": ["none", "sqrt", "sweep-1/5", "sweep-2/5", "sweep-3/5", "sweep-4/5", "sweep-5/5"],
}


def _sweep_objective(trial: optuna.Trial) -> float:
    trial.suggest_categorical("global_batch_size", SWEEP_SPACE["global_batch_size"])
    trial.suggest_categorical("lr_rule", SWEEP_SPACE["lr_rule"])
    return 1.0


def test_a_grid_without_a_sweep_keeps_its_order(tmp_path):
    space = {"global_batch_size": [256, 64, 128], "lr_rule": ["sqrt", "none", "linear"]}
    sampler = BatchAscendingGridSampler(space)
    assert sampler._visit == list(range(9))  # batch first, then the rules in grid order


def test_a_study_stored_in_the_old_order_is_resumed_without_running_a_point_twice(tmp_path):
    """A sweep study stored before the sweep's visit order (trial n at grid id n) and resumed
    now: the trials left take the points no trial took, each once."""
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    storage = open_storage(f"sqlite:///{tmp_path}/resume.db", create=True)
    old = BatchAscendingGridSampler(SWEEP_SPACE)
    assert old._visit != list(range(14))  # the sweep reorders
    old._visit = list(range(14))  # the order a study stored before it visited
    old._rank = {g: g for g in range(14)}
    study = optuna.create_study(study_name="s", storage=storage, sampler=old)
    study.optimize(_sweep_objective, n_trials=5)
    resumed = optuna.load_study(
        study_name="s", storage=storage, sampler=BatchAscendingGridSampler(SWEEP_SPACE)
    )
    resumed.optimize(_sweep_objective, n_trials=9)
    points = [(t.params["global_batch_size"], t.params["lr_rule"]) for t in resumed.trials]
    assert len(set(points)) == 14  # every point once
