"""The observer hears of each trial by its Optuna number (what ``tuner show`` lists), and the
child's epoch and progress events reach it by kind: a real Optuna study in SQLite, a fake child."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fake_child import PLAN, FakeChild, make_spec, ok

from tuner.core.outcome import ChildRun, TrialOutcome
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

    def trial_started(self, number: int, position: int, total: int, params: dict[str, Any]) -> None:
        self.started.append((number, position, total))

    def epoch_finished(self, event: EpochEvent) -> None:
        self.events.append(("epoch", event.epoch))

    def trial_progress(self, event: ProgressEvent) -> None:
        self.events.append(("progress", event.samples))

    def trial_finished(self, number: int, outcome: TrialOutcome) -> None:
        self.finished.append((number, outcome.status))

    def note(self, message: str) -> None:
        pass


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
