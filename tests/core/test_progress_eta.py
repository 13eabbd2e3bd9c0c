"""The study's ETA, durations for people, and the child's step reports (a fake clock)."""

from __future__ import annotations

from typing import Any

import pytest

from tuner.core.progress import (
    StepReporter,
    eta_seconds,
    format_duration,
    format_eta,
    progress_event,
)
from tuner.core.protocol import ProgressEvent


def test_eta_is_the_mean_duration_times_the_trials_left() -> None:
    assert eta_seconds([30.0, 50.0], trials_left=3) == 120.0
    # The running trial counts among those left, less what it has already run.
    assert eta_seconds([30.0, 50.0], trials_left=3, current_elapsed_s=25.0) == 95.0


def test_eta_is_unknown_before_any_trial_and_never_negative() -> None:
    assert eta_seconds([], trials_left=5) is None
    assert eta_seconds([10.0], trials_left=1, current_elapsed_s=40.0) == 0.0
    assert eta_seconds([10.0], trials_left=0) == 0.0


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.4, "0 s"),
        (31.2, "31 s"),
        (89, "89 s"),
        (120, "2 min"),
        (3000, "50 min"),
        (3900, "65 min"),
        (6000, "1 h 40 min"),
        (36300, "10 h 05 min"),
        (-3, "0 s"),
    ],
)
def test_durations_read_as_people_say_them(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_eta_text() -> None:
    assert format_eta(None) == "ETA -"
    assert format_eta(150.0) == "ETA 2 min"
    assert format_eta(0.0) == "done"


def test_the_step_reporter_speaks_at_most_once_per_interval() -> None:
    now = [0.0]
    events: list[Any] = []
    report = StepReporter(
        events.append, global_batch=64, total_steps=100, every_s=1.0, clock=lambda: now[0]
    )
    for step in range(1, 101):
        now[0] = step * 0.25  # four steps a second
        report(step)
    # A report at each whole second: steps 4, 8, ... 100.
    assert [e.step for e in events] == list(range(4, 101, 4))
    assert events[0] == progress_event(4, 100, 64)
    assert events[0] == ProgressEvent(step=4, steps=100, samples=256, total_samples=6400)
