"""What a search says while it runs: timestamped plain lines where stderr is not a terminal, rich
bars where it is, ``-q`` and ``-v`` through Python logging; every figure from a fake clock."""

from __future__ import annotations

import io
import logging
import re
from pathlib import Path

import optuna
from conftest import invoke_tuner
from progress_helpers import Clock, restore_logging  # noqa: F401  (the fixture)
from rich.console import Console
from rich.progress import TimeElapsedColumn

from tuner.console import logs
from tuner.console.progress import LogProgress, SearchProgress, search_progress
from tuner.core.outcome import TrialOutcome
from tuner.core.protocol import EpochEvent, ProgressEvent

STAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"
PARAMS = {
    "global_batch_size": 128,
    "per_replica_batch_size": 64,
    "lr_rule": "linear",
    "learning_rate": 0.002,
}
OK = TrialOutcome("ok", values=(0.004024, 21687.0), attrs={"train_loss": 0.004941})


def recording(terminal: bool = False) -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    console = Console(file=buffer, width=200, color_system=None, force_terminal=terminal)
    return console, buffer


def lines_of(buffer: io.StringIO) -> list[str]:
    return buffer.getvalue().splitlines()


def test_plain_lines_say_start_end_result_and_eta_with_a_timestamp() -> None:
    console, buffer = recording()
    logs.configure(logs.NORMAL, console)
    clock = Clock()
    progress = LogProgress(clock=clock)
    progress.trial_started(3, 1, 3, PARAMS)
    clock.now = 31.0
    progress.trial_finished(3, OK)
    progress.trial_started(4, 2, 3, PARAMS)  # pruned without running: no time, not in the ETA
    progress.trial_finished(4, TrialOutcome("oom-implied", error="global batch 128 ran out"))
    lines = lines_of(buffer)
    assert all(re.match(STAMP + " trial", line) for line in lines), lines
    texts = [line[20:] for line in lines]
    assert texts == [
        "trial 3 started: batch 128 (64/replica) · rule linear · lr 0.002 · 1 of 3",
        "trial 3 ok: batch 128 (64/replica) · rule linear · 21,687 samples/s · "
        "val loss 0.004024 · train loss 0.004941 · 31 s · ETA 62 s",
        "trial 4 started: batch 128 (64/replica) · rule linear · lr 0.002 · 2 of 3",
        "trial 4 oom-implied: batch 128 (64/replica) · rule linear · global batch 128 ran out · "
        "0 s · ETA 31 s",
    ]


def test_plain_progress_lines_come_once_a_minute_and_every_report_with_verbose() -> None:
    console, buffer = recording()
    logs.configure(logs.NORMAL, console)
    clock = Clock()
    progress = LogProgress(clock=clock, every_s=60.0)
    progress.trial_started(0, 1, 1, PARAMS)
    for second in range(1, 151):
        clock.now = float(second)
        progress.trial_progress(steps_done(128 * second, 128 * 200))
    shown = [line[20:] for line in lines_of(buffer)[1:]]
    assert shown == [
        "trial 0: 7,680/25,600 samples (30%) · 60 s in",
        "trial 0: 15,360/25,600 samples (60%) · 2 min in",
    ]
    console, buffer = recording()
    logs.configure(logs.VERBOSE, console)
    progress = LogProgress(clock=clock)
    progress.trial_started(1, 1, 1, PARAMS)
    progress.epoch_finished(EpochEvent(2, 6, 0.0123, 100.0, samples=2048, total_samples=4096))
    assert lines_of(buffer)[-1][20:] == (
        "trial 1: 2,048/4,096 samples (50%) · epoch 2/6 · loss 0.0123 · 0 s in"
    )


def test_quiet_keeps_failed_trials_and_drops_the_rest() -> None:
    console, buffer = recording(terminal=True)
    logs.configure(logs.QUIET, console)
    progress = search_progress(console)
    assert isinstance(progress, LogProgress)  # no bars with -q, even on a terminal
    progress.note("probing the largest global batch that fits…")
    progress.trial_started(0, 1, 2, PARAMS)
    progress.trial_finished(0, OK)
    progress.trial_started(1, 2, 2, PARAMS)
    progress.trial_finished(1, TrialOutcome("crashed", error="killed by SIGSEGV"))
    logs.say_info("report written to r.json")
    lines = lines_of(buffer)
    assert len(lines) == 1 and lines[0].startswith("trial 1 crashed: ")  # no stamp: a terminal


def test_bars_on_a_terminal_lines_elsewhere() -> None:
    logs.configure(logs.NORMAL, recording()[0])
    assert isinstance(search_progress(recording(terminal=True)[0]), SearchProgress)
    assert isinstance(search_progress(recording()[0]), LogProgress)


def test_the_trial_timer_starts_again_for_every_trial() -> None:
    # The bug: the running trial's bar was never reset, so once the first trial's samples were
    # all done, rich kept its finish time and showed it for every later trial.
    console, _ = recording(terminal=True)
    clock = Clock()
    progress = SearchProgress(console, clock=clock)

    def shown() -> str:
        return str(TimeElapsedColumn().render(progress.progress.tasks[-1]))

    progress.trial_started(0, 1, 2, PARAMS)
    clock.now = 10.0
    progress.epoch_finished(EpochEvent(2, 2, 0.1, 9.0, samples=512, total_samples=512))
    progress.trial_finished(0, OK)
    assert shown() == "0:00:10"
    clock.now = 100.0
    progress.trial_started(1, 2, 2, PARAMS)
    clock.now = 105.0
    progress.trial_progress(steps_done(128, 512))
    assert shown() == "0:00:05"
    assert len(progress.progress.tasks) == 2
    assert (progress.progress.tasks[-1].completed, progress.progress.tasks[-1].total) == (128, 512)


def test_the_bars_render_with_the_trial_and_its_samples() -> None:
    console, _ = recording(terminal=True)
    clock = Clock()
    progress = SearchProgress(console, clock=clock)
    progress.trial_started(2, 1, 6, PARAMS)
    clock.now = 31.0
    progress.trial_finished(2, OK)
    progress.trial_started(3, 2, 6, PARAMS)  # the second trial's task, drawn afresh
    assert rendered(progress).endswith("starting…")  # no count of the previous trial
    clock.now = 45.0
    progress.epoch_finished(EpochEvent(2, 6, 0.0123, 21687.0, samples=2048, total_samples=6144))
    trials, trial = rendered(progress).splitlines()
    # 31 s a trial: the 4 after this one and the 17 s this one has left.
    assert trials == "search: grid 0:00:45 1/6 trainings · ETA 2 min"
    assert trial == (
        "trial 3 · batch 128 · rule linear 0:00:14 2,048/6,144 samples · epoch 2/6 · loss 0.0123 · "
        "21,687 samples/s"
    )


def steps_done(samples: int, total_samples: int) -> ProgressEvent:
    """A progress event at ``samples`` of ``total_samples`` (one sample a step)."""
    return ProgressEvent(samples, total_samples, samples, total_samples)


def rendered(progress: SearchProgress) -> str:
    """The bars as plain text, each line's bar characters and runs of spaces squeezed."""
    console, buffer = recording(terminal=True)
    console.print(progress.progress.get_renderable())
    lines = [re.sub(r"[━╸╺ ]+", " ", line).strip() for line in lines_of(buffer)]
    return "\n".join(line for line in lines if line)


def test_the_bar_shows_the_eta_and_the_result_line_names_batch_rule_and_losses() -> None:
    console, buffer = recording(terminal=True)
    clock = Clock()
    progress = SearchProgress(console, clock=clock)
    trials_task = progress.progress.tasks[0]
    progress.trial_started(7, 1, 4, PARAMS)
    assert trials_task.fields["info"] == "0/4 trainings · ETA -"  # nothing to go by yet
    clock.now = 20.0
    progress.trial_finished(7, OK)
    assert trials_task.fields["info"] == "1/4 trainings · ETA 60 s"  # 20 s × 3 trials left
    progress.trial_started(8, 2, 4, PARAMS)
    clock.now = 30.0
    progress.trial_progress(steps_done(1, 2))
    assert trials_task.fields["info"] == "1/4 trainings · ETA 50 s"  # 10 s into the next
    assert lines_of(buffer) == [
        "trial 7 · batch 128 (64/replica) · rule linear · 21,687 samples/s · val loss 0.004024 · "
        "train loss 0.004941 · 20 s"
    ]


def test_verbose_passes_optunas_own_records_on(tmp_path: Path) -> None:
    console, buffer = recording()
    logs.configure(logs.VERBOSE, console)
    optuna.create_study(study_name="seen", storage=f"sqlite:///{tmp_path / 'v.db'}")
    assert any(
        re.match(STAMP + r" \[optuna\.[\w.]+\] A new study created", line)
        for line in lines_of(buffer)
    ), buffer.getvalue()
    console, buffer = recording()
    logs.configure(logs.NORMAL, console)
    logging.getLogger("optuna").setLevel(logging.ERROR)  # as the driver sets it
    optuna.create_study(study_name="unseen", storage=f"sqlite:///{tmp_path / 'v.db'}")
    assert buffer.getvalue() == ""


def test_quiet_and_verbose_exclude_each_other(tmp_path: Path) -> None:
    result = invoke_tuner("-q", "-v", "show", cwd=tmp_path)
    assert result.returncode == 2
    assert "exclude each other" in result.stderr


def test_a_repeat_line_shows_its_own_run_then_the_configurations_median() -> None:
    from tuner.console.progress import result_parts

    repeat = TrialOutcome(
        "ok",
        values=(0.0046, 50_000.0),
        attrs={"run_throughput": 35_000.0, "repeats": [57_000.0, 50_000.0, 35_000.0]},
    )
    assert result_parts(repeat)[:2] == ["35,000 samples/s", "median of 3 runs 50,000"]
    first = TrialOutcome("ok", values=(0.0046, 57_000.0), attrs={"repeats": [57_000.0]})
    assert result_parts(first)[:2] == ["57,000 samples/s", "val loss 0.0046"]


def test_what_tuner_did_to_a_trials_training_is_said_once() -> None:
    """Every trial stores its ``add_loss_note`` (issue 45); the search says it after the first."""
    console, buffer = recording()
    logs.configure(logs.NORMAL, console)
    note = "add_loss() from a Keras loss object: ... multiplied by 2"
    progress = LogProgress(clock=Clock(), stamped=False)
    for number in (1, 2):
        progress.trial_started(number, number, 2, PARAMS)
        progress.trial_finished(
            number, TrialOutcome("ok", (0.7, 1e4), attrs={"add_loss_note": note})
        )
    texts = [line[20:] for line in lines_of(buffer)]
    assert [text for text in texts if "add_loss" in text] == [note]
    assert texts.index(note) == 2  # after trial 1's result line
