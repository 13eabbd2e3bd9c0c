"""The live search progress: rich bars on a terminal, timestamped plain lines elsewhere.

Both are a :class:`tuner.driver.observer.SearchObserver`. Each names a trial by its Optuna number
(what ``tuner show`` lists under ``#``), says how far the running trial is in samples (the child
reports about once a second) and how long the study has left: the mean duration of the trials
that ran in this run (``oom-implied`` ones take no time) times the trials left
(:func:`tuner.core.progress.eta_seconds`).

- :class:`SearchProgress` (stderr is a terminal): a bar of trials with the ETA, a bar of the
  running trial's samples, and one result line per trial.
- :class:`LogProgress` (stderr is not a terminal, or ``-q``): records of the ``tuner.search``
  logger, which :mod:`tuner.cli.logs` writes with a timestamp: a line when a trial starts and one
  when it ends (with the ETA), a line of the running trial's progress at most once a minute (each
  of the child's reports at DEBUG, ``-v``). With ``-q`` only failed trials are shown.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from tuner.cli.display import say, status_text
from tuner.cli.logs import logger
from tuner.core.outcome import TrialOutcome
from tuner.core.progress import eta_seconds, format_duration, format_eta
from tuner.core.protocol import EpochEvent, ProgressEvent
from tuner.driver.observer import LOGGER

Clock = Callable[[], float]
PLAIN_PROGRESS_EVERY_S = 60.0
"""How often (at most) a plain log says how far the running trial is, at INFO."""
FAILED = frozenset({"error", "crashed", "timeout", "interrupted"})
"""Statuses that are a failure of the run, not a finding (logged as warnings: ``-q`` keeps them)."""
_ERROR_WIDTH = 240


def configuration(params: dict[str, Any], precision: bool = False) -> list[str]:
    """What a trial runs, as parts of a line: ``batch 128 (64/replica)``, ``rule linear``, with
    ``precision`` (a study of several) ``precision mixed_bfloat16``, and the model
    hyperparameters of a hypermodel's trial."""
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
    first = error[0]
    return [first if len(first) <= _ERROR_WIDTH else first[: _ERROR_WIDTH - 1] + "…"]


def start_line(
    number: int, position: int, total: int, params: dict[str, Any], precision: bool = False
) -> str:
    """``trial 3 started: batch 128 (64/replica) · rule linear · lr 0.002 · 2 of 6`` (with
    ``precision``, ``· precision mixed_bfloat16`` after the rule)."""
    parts = [
        *configuration(params, precision),
        f"lr {params['learning_rate']:.3g}",
        f"{position} of {total}",
    ]
    return f"trial {number} started: " + " · ".join(parts)


def end_line(
    number: int,
    params: dict[str, Any] | None,
    outcome: TrialOutcome,
    seconds: float | None,
    eta: float | None,
    precision: bool = False,
) -> str:
    """``trial 3 ok: batch 128 (64/replica) · rule linear · 21,687 samples/s · val loss 0.004024 ·
    train loss 0.004941 · 31 s · ETA 2 min`` (with ``precision``, the trial's after the rule)."""
    parts = [*(configuration(params, precision) if params else []), *result_parts(outcome)]
    if seconds is not None:
        parts.append(format_duration(seconds))
    parts.append(format_eta(eta))
    return f"trial {number} {outcome.status}: " + " · ".join(parts)


def progress_line(number: int, event: EpochEvent | ProgressEvent, seconds: float) -> str:
    """``trial 3: 2,048/4,096 samples (50%) · epoch 2/6 · loss 0.0123 · 12 s in``."""
    done, total = event.samples, event.total_samples
    parts = [f"{done:,}/{total:,} samples ({done / total:.0%})" if total else f"{done:,} samples"]
    if isinstance(event, EpochEvent):
        parts.append(f"epoch {event.epoch}/{event.epochs}")
        parts.append(f"loss {event.loss:.4g}")
    parts.append(f"{format_duration(seconds)} in")
    return f"trial {number}: " + " · ".join(parts)


class _Tracker:
    """What both views keep: the running trial, its start, the durations of those that ran;
    ``precisions``: whether the study searches several precisions (its lines name a trial's)."""

    def __init__(self, clock: Clock, precisions: bool = False) -> None:
        self._clock = clock
        self._precisions = precisions
        self._durations: list[float] = []
        self._params: dict[int, dict[str, Any]] = {}
        self._number: int | None = None
        self._started_at = 0.0
        self._position = 0
        self._total = 0

    def _start(self, number: int, position: int, total: int, params: dict[str, Any]) -> None:
        self._number, self._position, self._total = number, position, total
        self._params[number] = params
        self._started_at = self._clock()

    def _elapsed(self) -> float:
        return self._clock() - self._started_at

    def _finish(self, number: int, outcome: TrialOutcome) -> float | None:
        """The trial's duration (``None`` if its start was not seen); kept for the ETA unless
        it never ran (``oom-implied``)."""
        if number != self._number:
            return None
        seconds = self._elapsed()
        if outcome.status != "oom-implied":
            self._durations.append(seconds)
        self._number = None
        return seconds

    def eta(self) -> float | None:
        """Seconds the study has left: the running trial (if any) and those after it."""
        running = self._number is not None
        left = self._total - self._position + (1 if running else 0)
        return eta_seconds(self._durations, left, self._elapsed() if running else 0.0)


class SearchProgress(_Tracker):
    """A :class:`~tuner.driver.observer.SearchObserver` drawn as two rich bars (trials with the
    ETA; the running trial's samples) and a result line per trial."""

    def __init__(
        self, console: Console, clock: Clock = time.monotonic, precisions: bool = False
    ) -> None:
        super().__init__(clock, precisions)
        self._console = console
        self._progress = Progress(
            TextColumn("{task.description}", markup=False),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[unit]}", markup=False),
            TimeElapsedColumn(),
            TextColumn("{task.fields[info]}", markup=False),
            console=console,
            transient=True,
            get_time=clock,
        )
        self._trials = self._progress.add_task("trials", total=None, unit="trials", info="")
        self._trial = self._add_trial_task("trial", visible=False)

    def _add_trial_task(self, description: str, visible: bool) -> TaskID:
        return self._progress.add_task(
            description, total=None, visible=visible, unit="samples", info="starting…"
        )

    def __enter__(self) -> SearchProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    @property
    def progress(self) -> Progress:
        """The rich progress (its tasks: the trials, then the running trial)."""
        return self._progress

    def trial_started(self, number: int, position: int, total: int, params: dict[str, Any]) -> None:
        self._start(number, position, total, params)
        self._progress.update(
            self._trials, total=total, completed=position - 1, info=format_eta(self.eta())
        )
        # A fresh task for every trial: an updated one keeps its start and finish times (the
        # timer showed the first trial's time for every later one), and rich's reset keeps the
        # previous trial's total and drops the task's fields.
        self._progress.remove_task(self._trial)
        self._trial = self._add_trial_task(
            f"trial {number}: " + ", ".join(configuration(params, self._precisions)), visible=True
        )

    def epoch_finished(self, event: EpochEvent) -> None:
        info = (
            f"epoch {event.epoch}/{event.epochs} · loss {event.loss:.4g} · "
            f"{event.throughput:,.0f} samples/s"
        )
        self._samples(event, info)

    def trial_progress(self, event: ProgressEvent) -> None:
        self._samples(event, None)

    def _samples(self, event: EpochEvent | ProgressEvent, info: str | None) -> None:
        self._progress.update(self._trial, completed=event.samples, total=event.total_samples)
        if info is not None:
            self._progress.update(self._trial, info=info)
        self._progress.update(self._trials, info=format_eta(self.eta()))

    def note(self, message: str) -> None:
        say(self._console, f"  {message}")

    def trial_finished(self, number: int, outcome: TrialOutcome) -> None:
        seconds = self._finish(number, outcome)
        self._progress.update(self._trial, visible=False)
        self._progress.update(self._trials, completed=self._position, info=format_eta(self.eta()))
        params = self._params.pop(number, None)
        shown = configuration(params, self._precisions) if params else []
        parts = [*shown, *result_parts(outcome)]
        if seconds is not None:
            parts.append(format_duration(seconds))
        line = Text(f"trial {number} · ")
        if outcome.status != "ok":
            line.append_text(status_text(outcome.status))
            line.append(" · ")
        line.append(" · ".join(parts))
        self._console.print(line, soft_wrap=True)


class LogProgress(_Tracker):
    """A :class:`~tuner.driver.observer.SearchObserver` that writes records of the
    ``tuner.search`` logger (timestamped plain lines, by :mod:`tuner.cli.logs`)."""

    def __init__(
        self,
        clock: Clock = time.monotonic,
        every_s: float = PLAIN_PROGRESS_EVERY_S,
        precisions: bool = False,
    ) -> None:
        super().__init__(clock, precisions)
        self._log = logger("search")
        self._every = every_s
        self._last_line = 0.0

    def __enter__(self) -> LogProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def trial_started(self, number: int, position: int, total: int, params: dict[str, Any]) -> None:
        self._start(number, position, total, params)
        self._last_line = self._clock()
        self._log.info("%s", start_line(number, position, total, params, self._precisions))

    def epoch_finished(self, event: EpochEvent) -> None:
        self._progress(event)

    def trial_progress(self, event: ProgressEvent) -> None:
        self._progress(event)

    def _progress(self, event: EpochEvent | ProgressEvent) -> None:
        if self._number is None:
            return
        now = self._clock()
        due = now - self._last_line >= self._every
        if due:
            self._last_line = now
        level = logging.INFO if due else logging.DEBUG
        if self._log.isEnabledFor(level):
            self._log.log(level, "%s", progress_line(self._number, event, self._elapsed()))

    def note(self, message: str) -> None:
        self._log.info("%s", message)

    def trial_finished(self, number: int, outcome: TrialOutcome) -> None:
        seconds = self._finish(number, outcome)
        params = self._params.pop(number, None)
        line = end_line(number, params, outcome, seconds, self.eta(), self._precisions)
        self._log.log(logging.WARNING if outcome.status in FAILED else logging.INFO, "%s", line)


def search_progress(console: Console, precisions: bool = False) -> SearchProgress | LogProgress:
    """Bars where ``console`` is a terminal and progress is shown; timestamped lines where it is
    not (nohup, Slurm, CI logs), and only failures with ``-q``. ``precisions``: the study
    searches several precisions, so each trial's line names its own."""
    shown = logging.getLogger(LOGGER).isEnabledFor(logging.INFO)
    if console.is_terminal and shown:
        return SearchProgress(console, precisions=precisions)
    return LogProgress(precisions=precisions)
