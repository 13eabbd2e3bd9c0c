"""The study's ETA, durations for people, and the child's step reports (a fake clock)."""

from __future__ import annotations

from typing import Any

import pytest

from tuner.core.outcome import TrialOutcome
from tuner.core.plan import SearchPlan, busiest, busy_line, load_record
from tuner.core.progress import (
    StepReporter,
    clipped,
    format_duration,
    format_eta,
    joined,
    leading_parts,
    progress_event,
    wrap_parts,
)
from tuner.core.protocol import ProgressEvent
from tuner.core.tracker import Tracker


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


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Said(Tracker):
    """A tracker that keeps the plan lines it says."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock)
        self.lines: list[str] = []

    def _say(self, line: str) -> None:
        self.lines.append(line)


def _train(tracker: Said, clock: FakeClock, label: str, seconds: float) -> None:
    tracker.training_started(label)
    clock.now += seconds
    tracker.training_finished()


def test_the_plan_comes_first_then_its_time_which_counts_every_phase() -> None:
    clock = FakeClock()
    tracker = Said(clock)
    tracker.planned(SearchPlan(check=1, baseline=2, grid=2, seeds=1, repeats_at_most=2))
    assert tracker.lines == [
        "plan: 6 trainings (≤ 8 with repeats): 1 check, 2 baseline, 1 seed, 2 grid, "
        "≤ 2 repeats; the time is estimated once a training has run"
    ]
    _train(tracker, clock, "workload check", 10.0)  # shorter than a training: not timed
    assert tracker.eta() is None and len(tracker.lines) == 1
    tracker.phase("baseline", 2)
    _train(tracker, clock, "baseline · batch 64", 20.0)
    # 20 s a training × (1 baseline run + 1 seed run + 2 grid points) left; 2 repeats may come.
    assert tracker.eta() == 80.0 and tracker.eta(at_most=True) == 120.0
    assert tracker.lines[-1] == (
        "left: 4 trainings (≤ 6 with repeats): 1 baseline, 1 seed, 2 grid, ≤ 2 repeats; "
        "≈ 80 s at this machine's speed (≤ 2 min with repeats)"
    )
    assert tracker.eta_text() == "ETA 80 s, ≤ 2 min with repeats"
    _train(tracker, clock, "baseline · batch 64", 40.0)  # mean 30 s now
    assert tracker.eta() == 90.0 and tracker.counts() == (3, 6)
    tracker.start_trial(0, 1, 2, {})
    clock.now += 30.0
    tracker.finish_trial(0, TrialOutcome("ok", values=(0.1, 10.0)))
    tracker.start_trial(1, 2, 2, {})
    clock.now += 30.0
    tracker.finish_trial(1, TrialOutcome("ok", values=(0.1, 10.0)))
    tracker.phase("seeds", 1)
    _train(tracker, clock, "seed run · batch 64", 30.0)
    assert tracker.eta() == 0.0 and tracker.eta(at_most=True) == 60.0
    tracker.phase("repeats", 1)  # racing queues one repeat: the plan is said again
    assert tracker.lines[-1].startswith(
        "left: 1 training (≤ 2 with repeats): 1 repeat (≤ 2); ≈ 30 s"
    )
    tracker.start_trial(2, 3, 3, {})  # the repeat: the trial counts run on
    assert tracker.counts() == (6, 7) and tracker.eta(at_most=True) == 60.0
    clock.now += 30.0
    tracker.finish_trial(2, TrialOutcome("ok", values=(0.1, 10.0)))
    tracker.phase("repeats", 0)  # the race is over
    assert tracker.eta() == 0.0 and tracker.eta(at_most=True) == 0.0
    assert tracker.eta_text() == "done"


def test_lines_break_between_parts_never_inside_one() -> None:
    parts = ["batch 1024 (512/replica)", "rule sqrt", "20,793 samples/s", "val loss 0.005384"]
    lines = wrap_parts("trial 11 ok:", parts, 40)
    assert lines == [
        "trial 11 ok: batch 1024 (512/replica)",
        "    rule sqrt · 20,793 samples/s",
        "    val loss 0.005384",
    ]
    assert all(len(line) <= 40 for line in lines)
    assert joined("trial 11 ok:", parts[:2]) == "trial 11 ok: batch 1024 (512/replica) · rule sqrt"
    assert wrap_parts("", ["a" * 50], 40) == ["a" * 50]  # too long for any line: alone
    assert leading_parts(["123,904/245,760 samples", "epoch 2/6", "loss 0.01235"], 35) == (
        "123,904/245,760 samples · epoch 2/6"
    )
    assert leading_parts(["123,904/245,760 samples", "epoch 2/6"], 10) == "123,904/245,760 samples"


def test_a_busy_machine_is_one_whose_load_takes_half_its_cores() -> None:
    quiet = load_record(0.4, 2, 0, "t")
    assert not quiet["busy"] and busy_line(quiet) is None
    busy = load_record(12.0, 2, 0, "t")
    assert busy_line(busy) == (
        "the machine was busy (load 12 on 2 cores): throughput figures are not reliable"
    )
    assert load_record(0.9, 16, 0, "t")["busy"] is False
    assert load_record(8.0, 16, 0, "t")["busy"] is True
    gpu = load_record(0.1, 16, 2, "t")
    assert busy_line(gpu) == (
        "the machine was busy (load 0.1 on 16 cores, 2 other process(es) on the GPUs): "
        "throughput figures are not reliable"
    )
    # A study keeps its busiest run: its figures were measured then.
    assert busiest(busy, quiet) == busy and busiest(quiet, busy) == busy
    assert (
        busiest(None, quiet) == quiet
        and busiest(quiet, load_record(0.2, 2, 0, "u"))["measured_at"] == "u"
    )


def test_a_resumed_study_says_what_is_left_of_the_plan() -> None:
    clock = FakeClock()
    tracker = Said(clock)
    tracker.planned(SearchPlan(check=1, baseline=2, grid=4, seeds=1, repeats_at_most=4))
    _train(tracker, clock, "workload check", 10.0)
    tracker.phase("baseline", 0)  # stored by the first run
    tracker.phase("grid", 4)  # nothing measured before: no new line
    assert len(tracker.lines) == 1
    tracker.phase("grid", 1)
    assert tracker.lines[-1] == (
        "left: 2 trainings (≤ 6 with repeats): 1 seed, 1 grid, ≤ 4 repeats; "
        "the time is estimated once a training has run"
    )


@pytest.mark.parametrize(
    ("text", "width", "shown"),
    [
        ("loss 2.31 vs 1.841e-03 at epoch 2", 33, "loss 2.31 vs 1.841e-03 at epoch 2"),  # it fits
        ("loss 2.31 vs 1.841e-03 at epoch 2", 20, "loss 2.31 vs…"),  # not "vs 1.841e"
        ("loss 2.31 vs 1.841e-03 at epoch 2", 24, "loss 2.31 vs 1.841e-03 …"),
        ("loss 2.31 vs 1.841e-03 at epoch 2", 23, "loss 2.31 vs…"),
        ("loss 2.31 vs 1.841e-03 at epoch 2", 11, "loss 2.31 …"),  # a whole number, a space
        ("loss 2.31 vs 1.841e-03 at epoch 2", 10, "loss…"),  # no room for the space: a word fewer
        ("/very/long/path/name.py", 12, "/very/long…"),  # one word: cut between its tokens
        ("supercalifragilistic", 8, "superca…"),  # no break at all: inside it
        ("anything", 0, ""),
    ],
)
def test_clipped_text_ends_at_a_word_with_an_ellipsis(text: str, width: int, shown: str) -> None:
    assert clipped(text, width) == shown and len(shown) <= width
