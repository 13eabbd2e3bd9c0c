"""The live progress fits 80 and 100 columns: rendered by rich itself at that width, every line
of the bars and of the result lines is within it, and every number a line holds is there whole
(the bars leave out a part that does not fit, the lines break between parts)."""

from __future__ import annotations

import io
import os
import re
import signal

import pytest
from progress_helpers import Clock, restore_logging  # noqa: F401  (the fixture)
from rich.console import Console

from tuner.console import logs
from tuner.console.progress import ECHO_MARGIN, LogProgress, SearchProgress
from tuner.core.outcome import TrialOutcome
from tuner.core.plan import SearchPlan
from tuner.core.protocol import EpochEvent, ProgressEvent

PARAMS = {
    "global_batch_size": 1024,
    "per_replica_batch_size": 512,
    "lr_rule": "sqrt",
    "learning_rate": 0.00282843,
}
REPEAT = TrialOutcome(
    "ok",
    values=(0.005384123, 21687.0),
    attrs={"train_loss": 0.0053841, "run_throughput": 20793.4, "repeats": [1, 2, 3]},
)
NUMBER = re.compile(r"\d[\d,.]*\d|\d")
# What the lines say, each number whole: the result line at any width holds all of these.
RESULT_NUMBERS = {"1024", "512", "20,793", "21,687", "0.005384", "3", "10.97", "42"}
BUSY = "the machine was busy (load 10.97 on 2 cores): throughput figures are not reliable"


def _a_search(progress: SearchProgress | LogProgress, clock: Clock) -> None:
    """A note, a plan, a trial that ended, and the next one half-way through an epoch."""
    progress.note(BUSY)
    progress.planned(SearchPlan(check=1, baseline=3, grid=12, seeds=2, repeats_at_most=24))
    progress.trial_started(10, 10, 12, PARAMS)
    clock.now = 60.0
    progress.trial_finished(10, REPEAT)
    progress.trial_started(11, 11, 12, PARAMS)
    clock.now = 90.0
    event = EpochEvent(2, 6, 0.0123456, 20793.4, samples=123904, total_samples=245760)
    progress.epoch_finished(event)


@pytest.mark.parametrize("width", [80, 100])
def test_the_bars_and_the_result_lines_fit_and_cut_no_number(width: int) -> None:
    console = Console(width=width, record=True, force_terminal=True, file=io.StringIO())
    clock = Clock()
    progress = SearchProgress(console, clock=clock)
    _a_search(progress, clock)
    console.print(progress.progress.get_renderable())
    lines = console.export_text().splitlines()
    assert all(len(line) <= width for line in lines), "\n".join(lines)
    result = "\n".join(line for line in lines if not line.startswith(("search:", "trial 11 ")))
    assert "(≤ 42 with repeats)" in result and "≤ 24 repeats" in result  # ≤ stays with its number
    assert set(NUMBER.findall(result)) >= RESULT_NUMBERS, result
    search_bar = next(line for line in lines if line.startswith("search: grid"))
    trial_bar = next(line for line in lines if line.startswith("trial 11 "))
    # The bars keep their counts: the trainings, and the samples of the running one.
    assert re.search(r" \d+/\d+ trainings · ETA \d+ min", search_bar), search_bar
    assert "123,904/245,760 samples" in trial_bar, trial_bar
    assert "…" not in search_bar + trial_bar
    # Room for the ^C a terminal echoes after the last bar: else it wraps to a line rich does
    # not clear, and a bar stays drawn after Ctrl-C (issue 46).
    assert max(len(search_bar), len(trial_bar)) <= width - ECHO_MARGIN


@pytest.mark.parametrize("width", [80, 100])
def test_plain_lines_break_between_parts_at_the_width(width: int) -> None:
    console = Console(file=io.StringIO(), width=width, color_system=None, record=True)
    logs.configure(logs.NORMAL, console)
    clock = Clock()
    progress = LogProgress(clock=clock, every_s=0.0, width=width)
    _a_search(progress, clock)
    progress.trial_progress(ProgressEvent(121, 240, 123904, 245760))
    text = console.export_text()
    lines = text.splitlines()
    assert all(len(line) <= width for line in lines), text
    assert set(NUMBER.findall(text)) >= RESULT_NUMBERS, text
    # A line that goes on is indented under the message, not the timestamp.
    assert all(line.startswith(" " * 24) for line in lines if not line[0].isdigit())


def test_without_a_width_a_record_is_one_line() -> None:
    console = Console(file=io.StringIO(), width=80, color_system=None, record=True)
    logs.configure(logs.NORMAL, console)
    clock = Clock()
    _a_search(LogProgress(clock=clock), clock)
    ended = [line for line in console.export_text().splitlines() if " trial 10 ok: " in line]
    assert len(ended) == 1 and ended[0].endswith("· 60 s · ETA 8 min"), ended


def test_a_second_ctrl_c_waits_until_the_bars_are_cleared() -> None:
    """Ctrl-C (or SIGTERM) while the bars are being cleared is raised once they are: a bar
    stopped halfway would stay drawn above the table and the "interrupted" line."""
    console = Console(width=80, force_terminal=True, file=io.StringIO())
    progress = SearchProgress(console, clock=Clock())
    before = signal.getsignal(signal.SIGINT)
    progress.__enter__()
    stop = progress.progress.stop

    def interrupted_stop() -> None:
        os.kill(os.getpid(), signal.SIGINT)  # mid-clearing: noted, not raised here
        stop()

    progress.progress.stop = interrupted_stop  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        progress.__exit__(None, None, None)
    assert not progress.progress.live.is_started
    assert signal.getsignal(signal.SIGINT) is before  # the handler is back
