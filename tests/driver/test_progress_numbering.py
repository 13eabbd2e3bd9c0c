"""The observer hears of each trial by its Optuna number (what ``tuner show`` lists), the
child's epoch and progress events reach it by kind, and it hears the plan, each phase and each
training that is no trial: a real Optuna study in SQLite, a fake child."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fake_child import PLAN, FakeChild, make_spec, ok

from tuner.core.outcome import ChildRun, TrialOutcome
from tuner.core.plan import SearchPlan
from tuner.core.progress import progress_event
from tuner.core.protocol import EpochEvent, Event, ProgressEvent, WindowsDoneEvent
from tuner.driver import study as study_module
from tuner.driver.study import run_search


class EventfulChild(FakeChild):
    """A fake child that reports an epoch, a step and an event that is not progress."""

    def run(
        self,
        request: dict[str, Any],
        env: dict[str, str],
        timeout_s: float,
        on_event: Callable[[Event], None] | None = None,
    ) -> ChildRun:
        if on_event is not None and request.mode == "trial":
            on_event(progress_event(3, 8, request.global_batch_size))
            on_event(EpochEvent(1, 2, 0.5, 100.0, 256, 512))
            on_event(WindowsDoneEvent())
        return super().run(request, env, timeout_s, on_event)


class Recorder:
    """A :class:`~tuner.driver.observer.SearchObserver` that writes down what it hears."""

    def __init__(self) -> None:
        self.started: list[tuple[int, int, int]] = []
        self.finished: list[tuple[int, str]] = []
        self.events: list[tuple[str, Any]] = []
        self.told: list[tuple[str, Any]] = []

    def trial_started(self, number: int, position: int, total: int, params: dict[str, Any]) -> None:
        self.started.append((number, position, total))

    def epoch_finished(self, event: EpochEvent) -> None:
        self.events.append(("epoch", event.epoch))
        self.told.append(("epoch", event.epoch))

    def trial_progress(self, event: ProgressEvent) -> None:
        self.events.append(("progress", event.samples))

    def trial_finished(self, number: int, outcome: TrialOutcome) -> None:
        self.finished.append((number, outcome.status))

    def note(self, message: str) -> None:
        pass

    def planned(self, plan: SearchPlan) -> None:
        self.told.append(("planned", plan))

    def phase(self, name: str, trainings: int) -> None:
        self.told.append(("phase", (name, trainings)))

    def training_started(self, label: str) -> None:
        self.told.append(("training", label))

    def training_finished(self) -> None:
        self.told.append(("ended", None))


def test_trials_are_told_by_their_optuna_number_and_events_by_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(study_module, "refresh", lambda study, warn=None: None)
    child = EventfulChild(lambda request: ok(request.global_batch_size))
    recorder = Recorder()
    url = f"sqlite:///{tmp_path / 'numbers.db'}"
    spec = make_spec(multipliers=(1, 2))
    report = run_search(spec, PLAN, url, baseline=False, observer=recorder, runner=child)

    trials = sorted(report.study.get_trials(), key=lambda t: t.number)
    numbers = [t.number for t in trials]
    assert numbers == [0, 1, 2, 3]  # Optuna counts from 0; the positions below from 1
    # Trial 1 (batch 64, the second rule) trains like trial 0: no child, so it never starts, but
    # it counts among the positions and is told finished.
    assert recorder.started == [(number, number + 1, 4) for number in numbers if number != 1]
    assert recorder.finished == [(number, "ok") for number in numbers]
    # Each trial's events, in order, routed by kind; the unknown kind reaches nobody.
    expected = []
    for trial in trials[:1] + trials[2:]:
        expected += [("progress", 3 * trial.params["global_batch_size"]), ("epoch", 1)]
    assert recorder.events == expected


def test_the_plan_then_every_phase_and_every_training_that_is_no_trial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(study_module, "refresh", lambda study, warn=None: None)
    recorder = Recorder()
    url = f"sqlite:///{tmp_path / 'phases.db'}"
    spec = make_spec(multipliers=(1, 2), seeds=2, max_repeats=2)
    run_search(spec, PLAN, url, observer=recorder, runner=EventfulChild(lambda r: ok(64)))
    # Before any child, the counts: 1 check, 2 baseline runs (max_repeats), 4 grid points, the
    # 1 seed the grid's base trial does not give, up to 4 repeats (each point once more).
    assert recorder.told[0] == (
        "planned",
        SearchPlan(check=1, baseline=2, grid=4, seeds=1, repeats_at_most=4),
    )
    told = [what for what in recorder.told[1:] if what[0] not in ("ended", "epoch")]
    # Every training that is no trial is announced (and ended), in the phases' order; racing
    # says each round's repeats (one score for every point: all tied; of batch 128's two rules,
    # one computation, only one races) and that the race is over.
    assert told == [
        ("training", "workload check"),
        ("phase", ("baseline", 2)),
        ("training", "baseline · batch 64"),
        ("training", "baseline · batch 64"),
        ("phase", ("grid", 4)),
        ("phase", ("seeds", 1)),
        ("training", "seed run · batch 64"),
        ("phase", ("grid", 3)),  # the seeds ran right after the grid's base trial
        ("phase", ("repeats", 2)),
        ("phase", ("repeats", 0)),
    ]
    assert recorder.told.count(("ended", None)) == 4  # each of the 4 trainings ended
    # A baseline run's epochs reach the observer while it runs (its bar moves), as a trial's.
    first = recorder.told.index(("training", "baseline · batch 64"))
    assert recorder.told[first + 1 : first + 3] == [("epoch", 1), ("ended", None)]
    # Resumed: the baseline, the seeds and the grid are stored, so their phases say none left;
    # the seeds' before the grid's, whose revised plan line would count them (issue 44).
    again = Recorder()
    run_search(spec, PLAN, url, observer=again, runner=EventfulChild(lambda r: ok(64)))
    phases = [what for kind, what in again.told if kind == "phase"]
    assert phases[:3] == [("baseline", 0), ("seeds", 0), ("grid", 0)], again.told


def test_the_seed_runs_name_the_base_rule_as_the_table_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At the base batch rules none and linear train alike; the grid trains linear (its order
    is sorted), which the table shows: the seed-noise line names that rule too (issue 46)."""
    monkeypatch.setattr(study_module, "refresh", lambda study, warn=None: None)
    notes: list[str] = []
    recorder = Recorder()
    recorder.note = notes.append  # type: ignore[method-assign]
    url = f"sqlite:///{tmp_path / 'rule.db'}"
    spec = make_spec(multipliers=(1, 2), seeds=2)
    report = run_search(spec, PLAN, url, observer=recorder, runner=EventfulChild(lambda r: ok(64)))
    trained = [t for t in report.study.get_trials() if t.params["global_batch_size"] == 64]
    shown = min(trained, key=lambda t: t.number).params["lr_rule"]
    assert shown == "linear"  # sorted: the spec lists none first
    (line,) = [n for n in notes if n.startswith("seed noise: base configuration")]
    assert "(global batch 64, rule linear)" in line, line
