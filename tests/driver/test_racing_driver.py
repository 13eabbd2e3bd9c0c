"""Racing and seed noise in the driver: real Optuna studies in SQLite, a fake child.

What these prove without TensorFlow: close candidates at two batches run again (new trials,
``repeat_of`` the original) until their intervals separate or ``max_repeats``, two rules at one
batch do not (the loss decides them); each run stores its repeats, the
medians and an interval; a stopped racing resumes from the stored trials; the seed runs are stored
on the study and widen the loss tolerance racing applies.
"""

from __future__ import annotations

import itertools
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import optuna
import pytest
import sqlalchemy
from fake_child import PLAN, FakeChild, make_spec, ok
from optuna.trial import FrozenTrial, TrialState

from tuner.core.configurations import status_of, unique_trials
from tuner.core.record import decode
from tuner.driver import study as study_module
from tuner.driver.study import SearchReport, run_search

Result = Callable[[dict[str, Any]], dict[str, Any]]


@pytest.fixture(autouse=True)
def no_views(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(study_module, "refresh", lambda study, warn=None: None)


@pytest.fixture
def storage(tmp_path: Path) -> Iterator[str]:
    """SQLite in memory-backed /dev/shm where there is one (a disk syncs every commit)."""
    shm = Path("/dev/shm")
    fast = shm.is_dir() and os.access(shm, os.W_OK)
    folder = Path(tempfile.mkdtemp(prefix="tuner-racing-", dir=shm)) if fast else tmp_path
    yield f"sqlite:///{folder / 'racing.db'}"
    if fast:
        shutil.rmtree(folder, ignore_errors=True)


def search(storage: str, child: FakeChild, **spec: Any) -> SearchReport:
    # Grid (64, 128) × (none, linear): (64, none) is same_as (64, linear). With :func:`near` all
    # three losses are within the tolerance; (128, none)'s is worse than (128, linear)'s, the
    # same computation, so racing is between (64, linear) and (128, linear).
    return run_search(make_spec((1, 2), **spec), PLAN, storage, baseline=False, runner=child)


def measured(
    throughputs: dict[int, Iterator[float]], loss: Callable[[dict[str, Any]], float]
) -> Result:
    """A child whose throughput per batch comes from ``throughputs`` (one value a run; (128,
    none) always 1500, it is never raced), with three windows around it (the first one slow:
    tracing)."""

    def trial(request: dict[str, Any]) -> dict[str, Any]:
        batch, rule = request.global_batch_size, request.rule.name
        rate = 1500.0 if (batch, rule) == (128, "none") else next(throughputs[batch])
        windows = [rate / 10, rate * 0.99, rate, rate * 1.01]
        return ok(batch, throughput=rate, final_loss=loss(request), epoch_throughputs=windows)

    return trial


def near(request: dict[str, Any]) -> float:
    """Losses 0.1 % and 0.3 % apart: one tolerance holds them all."""
    batch, rule = request.global_batch_size, request.rule.name
    return {(64, "linear"): 1.0, (128, "linear"): 1.001, (128, "none"): 1.003}[(batch, rule)]


def repeats_of(study: optuna.Study) -> list[FrozenTrial]:
    return [t for t in study.get_trials(deepcopy=False) if decode(t).reuse.repeat_of is not None]


def configuration(study: optuna.Study, number: int) -> tuple[int, str]:
    params = study.trials[number].params
    return int(params["global_batch_size"]), str(params["lr_rule"])


def test_separated_candidates_get_one_second_run_each_and_racing_stops(storage: str) -> None:
    rates = {64: itertools.repeat(1000.0), 128: itertools.repeat(2000.0)}
    child = FakeChild(measured(rates, near))
    report = search(storage, child, max_repeats=3)
    # 3 grid launches (64 once) + a second run of each kept candidate; then separated.
    grid = [(64, "linear"), (128, "linear"), (128, "none")]
    # The repeats most decisive first: the best (128, 2000 samples/s), then its rival.
    assert child.launched() == [*grid, (128, "linear"), (64, "linear")]
    repeats = repeats_of(report.study)
    assert {(decode(t).reuse.repeat_of, decode(t).reuse.repeat_index) for t in repeats} == {
        (0, 2),
        (2, 2),
    }
    assert configuration(report.study, 2) == (128, "linear")
    assert report.launched == 6  # five runs and the same_as trial
    for trial in repeats:
        assert trial.state == TrialState.COMPLETE
        assert len(decode(trial).result.repeats) == 2
        assert decode(trial).result.throughput_ci_method == "t over 2 runs"


def test_two_rules_at_one_batch_are_not_repeated_the_loss_decides(storage: str) -> None:
    # Batch 64 is out of the tolerance (loss 1/batch); at 128 the rules measure alike (tied, the
    # worse loss even faster), yet only the lower loss gets its second run: no more runs.
    def loss(request: dict[str, Any]) -> float:
        return (1.002 if request.rule.name == "none" else 1.0) / request.global_batch_size

    rates = {64: itertools.repeat(500.0), 128: itertools.repeat(1000.0)}
    child = FakeChild(measured(rates, loss))  # (128, none): 1500
    report = search(storage, child, max_repeats=3)
    assert child.launched() == [(64, "linear"), (128, "linear"), (128, "none"), (128, "linear")]
    assert [decode(t).reuse.repeat_of for t in repeats_of(report.study)] == [2]


def test_ties_run_to_max_repeats_and_store_medians_and_intervals(storage: str) -> None:
    rates = {
        64: itertools.cycle([900.0, 1300.0, 1000.0]),
        128: itertools.cycle([1200.0, 800.0, 1100.0]),
    }
    child = FakeChild(measured(rates, near))
    report = search(storage, child, max_repeats=3)
    assert len(child.launched()) == 3 + 2 * 2  # each kept candidate 3 runs: still tied, stop
    assert {configuration(report.study, t.number) for t in repeats_of(report.study)} == {
        (64, "linear"),
        (128, "linear"),
    }
    reps = {t.params["global_batch_size"]: t for t in unique_trials(report.study.trials)
            if t.params["lr_rule"] == "linear"}  # fmt: skip
    small = decode(reps[64]).flat
    assert small["repeats"] == [900.0, 1300.0, 1000.0]
    assert small["run_throughput"] == 1000.0
    assert small["throughput"] == 1000.0 == reps[64].values[1]  # the median
    assert small["repeat_losses"] == [1.0] * 3
    low, high = small["throughput_ci"]
    assert low < 1000.0 < high and small["throughput_ci_method"] == "t over 3 runs"
    assert decode(reps[128]).flat["repeats"] == [1200.0, 800.0, 1100.0]
    original = decode(report.study.trials[decode(reps[64]).reuse.repeat_of or 0]).flat
    # Every measured trial stores its own run: one value, an interval over its windows.
    assert original["repeats"] == [900.0] and original["run_throughput"] == 900.0
    assert original["throughput_ci_method"].startswith("windows of 1 run")


def test_max_repeats_one_turns_racing_off(storage: str) -> None:
    rates = {64: itertools.repeat(1000.0), 128: itertools.repeat(1000.0)}
    child = FakeChild(measured(rates, near))
    search(storage, child, max_repeats=1)
    assert len(child.launched()) == 3


def test_a_stopped_race_resumes_from_the_stored_trials(storage: str) -> None:
    rates = {64: itertools.repeat(1000.0), 128: itertools.repeat(1010.0)}
    runs = measured(rates, near)
    calls = itertools.count()

    def stopped(request: dict[str, Any]) -> dict[str, Any]:
        if next(calls) == 4:  # the second repeat: after (128, linear)'s, the best
            raise KeyboardInterrupt
        return runs(request)

    child = FakeChild(stopped)
    with pytest.raises(KeyboardInterrupt):
        search(storage, child, max_repeats=2)
    study = optuna.load_study(study_name="fake", storage=storage)
    assert [status_of(t) for t in repeats_of(study)] == ["ok", "interrupted"]

    child = FakeChild(runs)
    report = search(storage, child, max_repeats=2)
    assert child.launched() == [(64, "linear")]  # only the missing repeat; no grid again
    done = [t for t in repeats_of(report.study) if t.state == TrialState.COMPLETE]
    assert sorted(decode(t).reuse.repeat_of for t in done) == [0, 2]


def test_seed_runs_are_stored_and_widen_the_tolerance_racing_applies(
    storage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Seeds move the base loss by ±60 %: batch 64 (loss 2x batch 128's) is within 2 × spread.
    def loss(request: dict[str, Any]) -> float:
        shift = {0: 1.0, 1: 1.6, 2: 0.4}[request.seed]
        return shift / request.global_batch_size

    rates = {64: itertools.repeat(500.0), 128: itertools.repeat(1000.0)}
    child = FakeChild(measured(rates, loss))
    notes: list[str] = []
    monkeypatch.setattr(
        "tuner.driver.observer.QuietObserver.note", lambda self, message: notes.append(message)
    )
    report = search(storage, child, seeds=3, max_repeats=2)
    seed_runs = [r for r in child.requests if r.mode == "trial" and r.seed != 0]
    assert [(r.seed, r.global_batch_size, r.rule.name) for r in seed_runs] == [
        (1, 64, "none"),
        (2, 64, "none"),
    ]
    noise = report.study.user_attrs["seed_noise"]["2x cpu"]
    assert noise["seeds"] == [0, 1, 2] and noise["global_batch_size"] == 64
    assert noise["final_losses"] == pytest.approx([1 / 64, 1.6 / 64, 0.4 / 64])
    assert noise["spread"] == pytest.approx(0.6)
    assert any("from seed noise" in note and "60.0%" in note for note in notes)
    # The wide tolerance keeps batch 64 a candidate: it is raced too (it ran at 500 samples/s);
    # at 128 the two rules (equal losses) are one computation: the lower number races alone.
    assert {decode(t).reuse.repeat_of for t in repeats_of(report.study)} == {0, 2}

    again = FakeChild(measured(rates, loss))
    phases: list[tuple[str, int]] = []
    monkeypatch.setattr(
        "tuner.driver.observer.QuietObserver.phase", lambda self, *phase: phases.append(phase)
    )
    search(storage, again, seeds=3, max_repeats=2)
    assert again.launched() == []  # stored: a resumed search measures the noise no more
    # ... and its plan, revised when the grid is found resumed, counts no seed run (issue 44).
    grid = next(i for i, (name, _) in enumerate(phases) if name == "grid")
    assert ("seeds", 0) in phases[:grid], phases


def test_a_repeat_that_misses_the_target_keeps_its_configuration_a_candidate() -> None:
    from tuner.core.outcome import TrialOutcome
    from tuner.driver.decide.racing import measured as with_runs

    first = optuna.trial.create_trial(
        state=TrialState.COMPLETE,
        values=[0.1, 1000.0],
        params={},
        distributions={},
        user_attrs={
            "status": "ok",
            "run_throughput": 1000.0,
            "repeat_losses": [0.1],
            "time_to_target_runs": [10.0],
            "samples_to_target_runs": [4096],
        },
    )
    missed = TrialOutcome(
        "ok", values=(0.12, 1100.0), attrs={"time_to_target_s": None, "samples_to_target": None}
    )
    attrs = with_runs(missed, [first], target=True).attrs
    assert attrs["reached_target"] is True and attrs["reached_runs"] == 1
    assert attrs["time_to_target_runs"] == [10.0, None] and attrs["time_to_target_s"] == 10.0
    assert attrs["samples_to_target_runs"] == [4096, None] and attrs["samples_to_target"] == 4096
    reached = TrialOutcome(
        "ok", values=(0.09, 900.0), attrs={"time_to_target_s": 14.0, "samples_to_target": 6144}
    )
    attrs = with_runs(reached, [first], target=True).attrs
    assert attrs["time_to_target_s"] == 12.0 and attrs["samples_to_target"] == 5120  # medians


def test_no_seed_runs_under_a_loss_target_without_early_stops(storage: str) -> None:
    child = FakeChild(lambda request: ok(request.global_batch_size))
    report = search(storage, child, seeds=3, target_loss=0.5, early_stop=False)
    assert "seed_noise" not in report.study.user_attrs
    assert all(getattr(request, "seed", 0) == 0 for request in child.requests)


def test_under_a_loss_target_the_seed_runs_give_early_stops_noise_not_a_tolerance(
    storage: str,
) -> None:
    def answer(request: Any) -> dict[str, Any]:
        seed = getattr(request, "seed", 0)
        curve = [[512, 1.0 + 0.1 * seed], [1024, 0.49 - 0.01 * seed]]
        return ok(request.global_batch_size, target_curve=curve, reached_target=True)

    report = search(storage, FakeChild(answer), seeds=3, target_loss=0.5)
    (record,) = report.study.user_attrs["seed_noise"].values()
    assert record["seeds"] == [0, 1, 2] and len(record["curves"]) == 2
    assert "final_losses" not in record and "spread" not in record  # no loss tolerance


def test_a_repeat_a_killed_worker_left_running_makes_the_recommendation_provisional(
    storage: str, caplog: pytest.LogCaptureFixture
) -> None:
    rates = {64: itertools.repeat(1000.0), 128: itertools.repeat(1010.0)}
    search(storage, FakeChild(measured(rates, near)), max_repeats=2)
    study = optuna.load_study(study_name="fake", storage=storage)
    killed = repeats_of(study)[-1]
    # What SIGKILL during the repeat leaves: RUNNING, no values, a heartbeat still fresh.
    engine = sqlalchemy.create_engine(storage)
    with engine.begin() as db:
        db.execute(sqlalchemy.text("DELETE FROM trial_values WHERE trial_id = :t"),
                   {"t": killed._trial_id})  # fmt: skip
        db.execute(sqlalchemy.text("UPDATE trials SET state = 'RUNNING', datetime_complete = NULL "
                                   "WHERE trial_id = :t"), {"t": killed._trial_id})  # fmt: skip
    engine.dispose()
    study._storage.record_heartbeat(killed._trial_id)

    child = FakeChild(measured(rates, near))
    with caplog.at_level(logging.WARNING, logger="tuner.driver.decide.racing"):
        report = search(storage, child, max_repeats=2)
    assert child.launched() == []  # the repeat is not run twice at once
    assert report.running == 1
    (line,) = [r.getMessage() for r in caplog.records if "racing:" in r.getMessage()]
    original = decode(killed).reuse.repeat_of
    assert f"repeat #{killed.number} (run 2 of #{original}) is still RUNNING" in line
    assert "the recommendation is provisional" in line and "heartbeat grace period" in line
