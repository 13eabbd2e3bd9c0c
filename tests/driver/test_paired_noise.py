"""The LR sweep's paired noise (issue 32): with ``--lr-sweep`` and early stops, the base
configuration's seed runs are repeated at a second rate (the sweep's lowest), and the sweep's
points are tested against the best rate of their batch with the spread of the log loss ratio
over seeds, not the seed spread. The real driver on real SQLite, a fake child."""

from __future__ import annotations

import math
from typing import Any

import pytest
from fake_child import PLAN, FakeChild, make_spec, ok

from tuner.driver import study as study_module
from tuner.driver.study import run_search

SEED_SHIFT = {0: 1.0, 1: 1.6, 2: 0.5}
"""Seeds move every loss a lot (the seed spread is ~50 %) ..."""
RATE_SHIFT = {0: 1.00, 1: 1.02, 2: 0.99}
"""... but the ratio of two rates' losses hardly (1-2 % between seeds)."""


def answer(request: Any) -> dict[str, Any]:
    seed = getattr(request, "seed", 0)
    factor = request.learning_rate / 1e-3  # the base rate's loss x (lr / base lr) ^ 2 ...
    rate = max(factor, 1 / factor) ** 2 * (RATE_SHIFT[seed] if factor != 1 else 1.0)
    loss = SEED_SHIFT[seed] * rate / request.global_batch_size
    curve = [[256, 3 * loss], [512, 2 * loss], [768, 1.5 * loss], [1024, loss]]
    return ok(request.global_batch_size, final_loss=loss, val_curve=curve)


def test_seed_runs_at_a_second_rate_give_the_sweep_its_paired_noise(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(study_module, "refresh", lambda study, warn=None: None)
    child = FakeChild(answer)
    spec = make_spec((1, 4), seeds=3, lr_sweep=3)
    report = run_search(spec, PLAN, f"sqlite:///{tmp_path / 's.db'}", baseline=False, runner=child)
    seed_runs = [(r.seed, r.rule.name) for r in child.requests if getattr(r, "seed", 0) != 0]
    assert seed_runs == [(1, "none"), (2, "none"), (1, "sweep-1/3"), (2, "sweep-1/3")]
    (record,) = report.study.user_attrs["seed_noise"].values()
    paired = record["paired"]
    assert paired["lr_rule"] == "sweep-1/3" and paired["learning_rate"] == pytest.approx(5e-4)
    assert [run["seed"] for run in paired["runs"]] == [1, 2]
    assert record["spread"] > 0.4  # the seeds far apart

    at_256 = [
        r.early_stop
        for r in child.requests
        if getattr(r, "global_batch_size", 0) == 256 and getattr(r, "seed", 0) == 0
        and r.early_stop is not None and r.early_stop.reference_trial is not None
    ]  # fmt: skip
    assert at_256 and all(stop.paired for stop in at_256)
    # 2 seed pairs and the grid's own (64: none and sweep-1/3 at seed 0): 1 %, not 50 %
    assert {stop.noise_runs for stop in at_256} == {3}
    expected = [math.log(r) for r in (1.0, 1.02, 0.99)]
    mean = sum(expected) / 3
    sd = math.sqrt(sum((x - mean) ** 2 for x in expected) / 2)
    assert all(stop.noise_sd == pytest.approx(sd) for stop in at_256)


def test_no_pair_runs_without_a_sweep_or_without_early_stops(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(study_module, "refresh", lambda study, warn=None: None)
    for n, spec in enumerate(
        [make_spec((1, 4), seeds=3), make_spec((1, 4), seeds=3, lr_sweep=3, early_stop=False)]
    ):
        child = FakeChild(answer)
        run_search(spec, PLAN, f"sqlite:///{tmp_path / f'{n}.db'}", baseline=False, runner=child)
        rules = {r.rule.name for r in child.requests if getattr(r, "seed", 0) != 0}
        assert rules == {"none"}
