"""The budget in the driver: real Optuna studies in SQLite, a stand-in child that "trains" for
10 s of a hand-moved clock (the budget's, :data:`tuner.driver.decide.budget.CLOCK`) per run.

What these prove without TensorFlow: the seeds run right after the grid's base trial and before
the rest of the grid; under a budget a run that would not fit is not started — the seeds only
while the rest of the grid fits after them, the grid by ascending batch, the repeats most
decisive first — and what was left out is said and stored on the study.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from fake_child import PLAN, FakeChild, make_spec, ok

from tuner.core.budget import BUDGET
from tuner.driver import study as study_module
from tuner.driver.decide import budget as budget_module
from tuner.driver.study import SearchReport, run_search
from tuner.views.summary import budget_lines

RUN_S = 10.0


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


class Notes:
    """An observer that keeps the notes (the rest of the protocol does nothing)."""

    def __init__(self) -> None:
        self.notes: list[str] = []

    def note(self, message: str) -> None:
        self.notes.append(message)

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    monkeypatch.setattr(study_module, "refresh", lambda study, warn=None: None)
    fake = Clock()
    monkeypatch.setattr(budget_module, "CLOCK", fake)
    return fake


def child(clock: Clock) -> FakeChild:
    """Each run takes 10 s; batches 64 and 128 measure alike (tied) and their losses are 0.1 %
    apart; batch 128's rule none has a worse loss than its rule linear (the same computation, so
    the loss decides them and only (128, linear) races batch 64)."""
    rates = itertools.cycle([1000.0, 1010.0, 990.0])

    def trial(request: Any) -> dict[str, Any]:
        clock.now += RUN_S
        batch, rule = request.global_batch_size, getattr(request.rule, "name", None)
        rate = next(rates)
        loss = 1.0 + 0.001 * (batch == 128) + 0.002 * (rule == "none" and batch == 128)
        windows = [rate / 10, rate * 0.9, rate, rate * 1.1]
        return ok(batch, throughput=rate, final_loss=loss, epoch_throughputs=windows)

    return FakeChild(trial)


def search(tmp_path: Path, runner: FakeChild, **spec: Any) -> tuple[SearchReport, Notes]:
    notes = Notes()
    url = f"sqlite:///{tmp_path / 'budget.db'}"
    spec_ = make_spec((1, 2), **spec)
    report = run_search(spec_, PLAN, url, baseline=False, observer=notes, runner=runner)  # type: ignore[arg-type]
    return report, notes


def runs(runner: FakeChild) -> list[tuple[int, int]]:
    """``(global batch, seed)`` of each training, in order."""
    return [(r.global_batch_size, r.seed) for r in runner.requests if r.mode == "trial"]


def test_seeds_run_right_after_the_base_trial_and_repeats_stop_at_the_budget(
    tmp_path: Path, clock: Clock
) -> None:
    runner = child(clock)
    # 5 runs (base, 2 seeds, 2 points at 128; (64, linear) is the same training) = 50 s, then
    # 2 repeats fit 75 s; the next round (the two still tied) does not.
    report, notes = search(tmp_path, runner, seeds=3, max_repeats=3, budget=75.0)
    assert runs(runner)[:5] == [(64, 0), (64, 1), (64, 2), (128, 0), (128, 0)]
    assert len(runs(runner)) == 7 and clock.now == 70.0
    record = report.study.user_attrs[BUDGET]
    assert record["left_out"]["grid"] == 0 and record["left_out"]["seeds"] == 0
    assert record["left_out"]["repeats"] == 2 and record["more_s"] == 20.0
    assert record["tied"] == 2
    assert record["line"] == (
        "budget 1m15s: left out 2 repeats; 2 candidates still tied: 95 % intervals overlap; a "
        "larger budget (≈ 20 s more) would run them"
    )
    assert record["line"] in notes.notes and budget_lines(report.study.user_attrs) == [
        record["line"]
    ]


def test_a_short_budget_keeps_the_grid_and_leaves_the_seeds_out(
    tmp_path: Path, clock: Clock
) -> None:
    runner = child(clock)
    # Base 10 s; the seeds (20 s) and the rest of the grid (20 s) would need 50 s: over 35.
    report, _ = search(tmp_path, runner, seeds=3, max_repeats=3, budget=35.0)
    assert runs(runner) == [(64, 0), (128, 0), (128, 0)]
    assert report.study.user_attrs[BUDGET]["left_out"] == {
        "baseline": 0,
        "grid": 0,
        "seeds": 2,
        "repeats": 2,
    }
    assert "seed_noise" not in report.study.user_attrs


def test_a_grid_that_does_not_fit_runs_its_smaller_batches_and_is_not_raced(
    tmp_path: Path, clock: Clock
) -> None:
    runner = child(clock)
    report, _ = search(tmp_path, runner, seeds=3, max_repeats=3, budget=25.0)
    assert runs(runner) == [(64, 0), (128, 0)]
    record = report.study.user_attrs[BUDGET]
    assert record["left_out"] == {"baseline": 0, "grid": 1, "seeds": 2, "repeats": 0}
    assert "left out 1 grid point, 2 seeds (the answer covers only" in record["line"]
    # The same search again, with time: it runs only what was left out of the grid.
    clock.now = 0.0
    again = child(clock)
    search(tmp_path, again, seeds=1, max_repeats=1, budget=100.0)
    assert runs(again) == [(128, 0)]


def test_one_run_per_configuration_says_what_it_cannot_resolve(
    tmp_path: Path, clock: Clock
) -> None:
    runner = child(clock)
    report, notes = search(tmp_path, runner, seeds=1, max_repeats=1)
    assert len(runs(runner)) == 3
    record = report.study.user_attrs[BUDGET]
    assert record["quick"] is True and len(record["unresolved"]) == 1
    assert record["quick_line"].startswith(
        "quick (one run per configuration, no seed runs): run-to-run noise not measured, so "
        "these throughput differences from the pick are not resolved: #"
    )
    assert "line" not in record and record["quick_line"] in notes.notes


def test_a_tiny_budget_still_answers_the_baseline_runs_once_the_first_point_always(
    tmp_path: Path, clock: Clock
) -> None:
    runner = child(clock)
    url = f"sqlite:///{tmp_path / 'tiny.db'}"
    spec = make_spec((1, 2), seeds=3, max_repeats=3, budget=5.0)
    report = run_search(spec, PLAN, url, baseline=True, observer=Notes(), runner=runner)  # type: ignore[arg-type]
    # One baseline run (one device), then the grid's first point although over the budget.
    assert [(r.global_batch_size, r.plan.num_replicas) for r in runner.requests[1:]] == [
        (64, 1),
        (64, 2),
    ]
    record = report.study.user_attrs[BUDGET]
    # 3 grid points left, 2 trainings: (64, linear) trains as (64, none) did (no run).
    assert record["left_out"] == {"baseline": 2, "grid": 2, "seeds": 2, "repeats": 0}
    assert len(report.study.user_attrs["baselines"]["2x cpu"]["repeats"]) == 1
