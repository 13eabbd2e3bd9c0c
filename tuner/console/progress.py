"""The live search progress: rich bars on a terminal, timestamped plain lines elsewhere (a line
as a trial starts and ends, its progress at most once a minute; with ``-q`` only failures), one
trial's lines written once for both trackers."""

from __future__ import annotations

import logging
import os
import textwrap
import time
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Column
from rich.text import Text

from tuner.console.display import say, status_text
from tuner.console.logs import logger
from tuner.console.signals import interrupts_deferred
from tuner.core.outcome import TrialOutcome
from tuner.core.progress import (
    SEPARATOR,
    clipped,
    format_duration,
    format_eta,
    joined,
    leading_parts,
    wrap_parts,
)
from tuner.core.protocol import EpochEvent, ProgressEvent
from tuner.core.tracker import Clock, Tracker
from tuner.driver.observer import LOGGER

PLAIN_PROGRESS_EVERY_S = 60.0
"""How often (at most) a plain log says how far the running trial is, at INFO."""


def _wrap(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width``, broken at spaces only (``20,793`` or ``0.005384``
    is never cut), never after ``≤`` or ``≈``."""
    for sign in "≤≈":
        text = text.replace(f"{sign} ", f"{sign}\xa0")
    lines = textwrap.wrap(
        text, width, subsequent_indent="    ", break_long_words=False, break_on_hyphens=False
    )
    lines = lines or [text]
    return [line.replace("\xa0", " ") for line in lines]


_ELAPSED_WIDTH = 7  # 0:01:30: rich's elapsed-time column
ECHO_MARGIN = 3
"""Columns the bars leave free at the right: Ctrl-C makes the terminal echo ``^C`` after the
last bar; on a full-width line that wraps to a new one, which rich does not know of, so its
clearing stopped one line short and left the first bar drawn above what followed."""


def _bar_widths(width: int) -> tuple[int, int, int]:
    """Description, bar and information widths of a ``width``-column terminal."""
    description = min(60, max(12, width // 3))
    bar = 10 if width < 120 else 20
    info = max(10, width - description - bar - _ELAPSED_WIDTH - 3 - ECHO_MARGIN)
    return description, bar, info


class SearchProgress(Tracker):
    """Two rich bars and a result line per trial, within the console's width."""

    def __init__(
        self, console: Console, clock: Clock = time.monotonic, precisions: bool = False
    ) -> None:
        super().__init__(clock, precisions)
        self._console = console
        self._widths = _bar_widths(console.width)
        description, bar, info = self._widths
        self._progress = Progress(
            TextColumn(
                "{task.description}",
                markup=False,
                table_column=Column(width=description, no_wrap=True, overflow="ellipsis"),
            ),
            BarColumn(bar_width=bar),
            TimeElapsedColumn(),
            TextColumn(
                "{task.fields[info]}",
                markup=False,
                table_column=Column(width=info, no_wrap=True, overflow="ellipsis"),
            ),
            console=console,
            transient=True,
            get_time=clock,
        )
        self._trials = self._progress.add_task("search", total=None, info="")
        self._trial = self._add_trial_task("trial", visible=False)

    def _add_trial_task(self, description: str, visible: bool) -> TaskID:
        return self._progress.add_task(description, total=None, visible=visible, info="starting…")

    def __enter__(self) -> SearchProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        # Cleared whole even when Ctrl-C comes again meanwhile: a bar stopped halfway stays
        # drawn above the table and the "interrupted" line that follow.
        with interrupts_deferred():
            self._progress.stop()

    @property
    def progress(self) -> Progress:
        """The rich progress (its tasks: the search's trainings, then the running one)."""
        return self._progress

    def _say(self, line: str) -> None:
        self._print(_wrap(line, self._console.width))

    def _print(self, lines: list[str], status: str = "ok") -> None:
        for line in lines:
            text = Text(line)
            if status != "ok":
                text.highlight_words([status], style=status_text(status).style)
                status = "ok"  # the first line names it
            self._console.print(text, soft_wrap=True)

    def _update_search(self) -> None:
        done, total = self.counts()
        parts = [f"{done}/{total} trainings", *self.eta_text().split(", ")]
        info = leading_parts(parts, self._widths[2])
        description = f"search: {self._phase}"
        self._progress.update(
            self._trials, total=total, completed=done, info=info, description=description
        )

    def _begin(self, parts: list[str]) -> None:
        # A fresh task for every training: an updated one keeps its start and finish times (the
        # timer showed the first trial's time for every later one), and rich's reset keeps the
        # previous trial's total and drops the task's fields.
        self._progress.remove_task(self._trial)
        description = leading_parts(parts, self._widths[0])
        self._trial = self._add_trial_task(description, visible=True)
        self._update_search()

    def training_started(self, label: str) -> None:
        super().training_started(label)
        self._begin(label.split(SEPARATOR))

    def training_finished(self) -> None:
        super().training_finished()
        self._progress.update(self._trial, visible=False)
        self._update_search()

    def trial_started(self, number: int, position: int, total: int, params: dict[str, Any]) -> None:
        self.start_trial(number, position, total, params)
        self._begin([f"trial {number}", *short_configuration(params, self._precisions)])

    def epoch_finished(self, event: EpochEvent) -> None:
        info = [f"epoch {event.epoch}/{event.epochs}", f"loss {event.loss:.4g}"]
        self._samples(event, [*info, f"{event.throughput:,.0f} samples/s"])

    def trial_progress(self, event: ProgressEvent) -> None:
        self._samples(event, [])

    def _samples(self, event: EpochEvent | ProgressEvent, info: list[str]) -> None:
        done, total = event.samples, event.total_samples
        count = f"{done:,}/{total:,} samples" if total else f"{done:,} samples"
        shown = leading_parts([count, *info], self._widths[2])
        self._progress.update(self._trial, completed=done, total=total, info=shown)
        self._update_search()

    def note(self, message: str) -> None:
        for line in _wrap(message, self._console.width - 2):
            say(self._console, f"  {line}")

    def trial_finished(self, number: int, outcome: TrialOutcome) -> None:
        seconds = self.finish_trial(number, outcome)
        self._progress.update(self._trial, visible=False)
        self._update_search()
        params = self._params.pop(number, None)
        shown = configuration(params, self._precisions) if params else []
        parts = [*shown, *result_parts(outcome)]
        if seconds is not None:
            parts.append(format_duration(seconds))
        if outcome.status != "ok":
            parts.insert(0, outcome.status)
        lines = wrap_parts(f"trial {number}", parts, self._console.width)
        self._print(lines, outcome.status)
        for line in self.once(outcome):
            self.note(line)
        self.after_training()


class LogProgress(Tracker):
    """Records of the ``tuner.search`` logger. With a ``width``, a longer line continues on the
    next, indented, broken only between its parts; ``stamped``: lines start with a timestamp."""

    def __init__(
        self,
        clock: Clock = time.monotonic,
        every_s: float = PLAIN_PROGRESS_EVERY_S,
        precisions: bool = False,
        width: int | None = None,
        stamped: bool = True,
    ) -> None:
        super().__init__(clock, precisions)
        self._log = logger("search")
        self._every = every_s
        self._last_line = 0.0
        self._width = width
        self._stamp = len("2026-01-01 00:00:00 ") if stamped else 0

    def __enter__(self) -> LogProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def _fit(self, head: str, parts: list[str]) -> str:
        """One record's text: ``head`` and ``parts`` on one line, or wrapped to the width."""
        if self._width is None:
            return joined(head, parts)
        lines = wrap_parts(head, parts, self._width - self._stamp)
        return "\n".join([lines[0], *(" " * self._stamp + line for line in lines[1:])])

    def _say(self, line: str) -> None:
        self._log.info("%s", self._wrapped(line))

    def _wrapped(self, text: str) -> str:
        """``text`` wrapped at spaces to the width, later lines indented past the timestamp."""
        if self._width is None:
            return text
        indent = " " * (self._stamp + 4)
        lines = _wrap(text, self._width - self._stamp)
        return "\n".join([lines[0], *(indent + rest.strip() for rest in lines[1:])])

    def trial_started(self, number: int, position: int, total: int, params: dict[str, Any]) -> None:
        self.start_trial(number, position, total, params)
        self._last_line = self._clock()
        head, parts = start_parts(number, position, total, params, self._precisions)
        self._log.info("%s", self._fit(head, parts))

    def training_started(self, label: str) -> None:
        super().training_started(label)
        self._log.debug("%s started", label)

    def epoch_finished(self, event: EpochEvent) -> None:
        self._progress(event)

    def trial_progress(self, event: ProgressEvent) -> None:
        self._progress(event)

    def _progress(self, event: EpochEvent | ProgressEvent) -> None:
        if self._number is None:
            return
        now = self._clock()
        due = now - self._last_line >= self._every
        self._last_line = now if due else self._last_line
        level = logging.INFO if due else logging.DEBUG
        if self._log.isEnabledFor(level):
            head, parts = progress_parts(self._number, event, self._elapsed())
            self._log.log(level, "%s", self._fit(head, parts))

    def note(self, message: str) -> None:
        self._log.info("%s", self._wrapped(message))

    def trial_finished(self, number: int, outcome: TrialOutcome) -> None:
        seconds = self.finish_trial(number, outcome)
        params = self._params.pop(number, None)
        head, parts = end_parts(number, params, outcome, seconds, self.eta(), self._precisions)
        level = logging.WARNING if outcome.status in FAILED else logging.INFO
        self._log.log(level, "%s", self._fit(head, parts))
        for line in self.once(outcome):
            self.note(line)
        self.after_training()


def search_progress(console: Console, precisions: bool = False) -> SearchProgress | LogProgress:
    """Bars where ``console`` is a terminal and progress is shown, timestamped lines elsewhere;
    ``precisions``: each trial's line names its precision."""
    shown = logging.getLogger(LOGGER).isEnabledFor(logging.INFO)
    if console.is_terminal and shown:
        return SearchProgress(console, precisions=precisions)
    sized = console.is_terminal or "COLUMNS" in os.environ
    return LogProgress(
        precisions=precisions,
        width=console.width if sized else None,
        stamped=not console.is_terminal,
    )


FAILED = frozenset({"error", "crashed", "timeout", "interrupted"})
"""Statuses that are a failure of the run, not a finding (logged as warnings: ``-q`` keeps them)."""
_ERROR_WIDTH = 240


def configuration(params: dict[str, Any], precision: bool = False) -> list[str]:
    """What a trial runs, as line parts: ``batch 128 (64/replica)``, ``rule linear``, ..."""
    parts = [
        f"batch {params['global_batch_size']} ({params['per_replica_batch_size']}/replica)",
        f"rule {params['lr_rule']}",
    ]
    if precision and params.get("precision"):
        parts.append(f"precision {params['precision']}")
    values = params.get("model_hyperparameters")
    if values:
        parts.append("model " + " ".join(f"{key}={value}" for key, value in values.items()))
    return parts


def result_parts(outcome: TrialOutcome) -> list[str]:
    """What a trial found: throughput, validation and training loss; or its short error."""
    if outcome.values is not None:
        final_loss, throughput = outcome.values
        parts = [f"{outcome.attrs.get('run_throughput', throughput):,.0f} samples/s"]
        runs = outcome.attrs.get("repeats") or []
        if len(runs) > 1:  # this run's own figure, then what the configuration stands at
            parts.append(f"median of {len(runs)} runs {throughput:,.0f}")
        parts.append(f"val loss {final_loss:.4g}")
        train = outcome.attrs.get("train_loss")
        if isinstance(train, int | float):
            parts.append(f"train loss {train:.4g}")
        return parts
    error = (outcome.error or "").strip().splitlines()
    if not error:
        return []
    return [clipped(error[0], _ERROR_WIDTH)]


def short_configuration(params: dict[str, Any], precision: bool = False) -> list[str]:
    """What a trial runs, for a bar's narrow description: ``batch 128``, ``rule linear``."""
    parts = [f"batch {params['global_batch_size']}", f"rule {params['lr_rule']}"]
    if precision and params.get("precision"):
        parts.append(str(params["precision"]))
    return parts


def start_parts(
    number: int, position: int, total: int, params: dict[str, Any], precision: bool = False
) -> tuple[str, list[str]]:
    """``trial 3 started:`` and ``batch 128 (64/replica) · rule linear · lr 0.002 · 2 of 6``
    (with ``precision``, ``precision mixed_bfloat16`` after the rule)."""
    parts = [
        *configuration(params, precision),
        f"lr {params['learning_rate']:.3g}",
        f"{position} of {total}",
    ]
    return f"trial {number} started:", parts


def end_parts(
    number: int,
    params: dict[str, Any] | None,
    outcome: TrialOutcome,
    seconds: float | None,
    eta: float | None,
    precision: bool = False,
) -> tuple[str, list[str]]:
    """``trial 3 ok:`` and ``batch 128 (64/replica) · rule linear · 21,687 samples/s · val loss
    0.004024 · train loss 0.004941 · 31 s · ETA 2 min`` (with ``precision``, the trial's after
    the rule)."""
    parts = [*(configuration(params, precision) if params else []), *result_parts(outcome)]
    if seconds is not None:
        parts.append(format_duration(seconds))
    parts.append(format_eta(eta))
    return f"trial {number} {outcome.status}:", parts


def progress_parts(
    number: int, event: EpochEvent | ProgressEvent, seconds: float
) -> tuple[str, list[str]]:
    """``trial 3:`` and ``2,048/4,096 samples (50%) · epoch 2/6 · loss 0.0123 · 12 s in``."""
    done, total = event.samples, event.total_samples
    parts = [f"{done:,}/{total:,} samples ({done / total:.0%})" if total else f"{done:,} samples"]
    if isinstance(event, EpochEvent):
        parts.append(f"epoch {event.epoch}/{event.epochs}")
        parts.append(f"loss {event.loss:.4g}")
    parts.append(f"{format_duration(seconds)} in")
    return f"trial {number}:", parts
