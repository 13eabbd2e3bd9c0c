"""What the driver reports while a search works; the CLI draws it (rich bars on a terminal,
timestamped lines elsewhere: :mod:`tuner.console.progress`)."""

from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from tuner.core.outcome import TrialOutcome
from tuner.core.plan import SearchPlan
from tuner.core.protocol import EpochEvent, Event, ProgressEvent

if TYPE_CHECKING:
    from tuner.core.outcome import ChildRun
    from tuner.core.protocol import Request
    from tuner.driver.children import ChildRunner, OnEvent

LOGGER = "tuner"
"""The root of tuner's loggers; the CLI's ``-q``/``-v`` set its level."""


class SearchObserver(Protocol):
    """Progress of a search; each method does nothing unless a class implements it.
    ``number`` is the Optuna trial number (what ``tuner show`` lists in ``#``); ``position`` of
    ``total`` counts the trials of the grid (or joint budget), this worker's first one after those
    already finished. Events are the child's, passed on from the runner's reader thread."""

    def trial_started(self, number: int, position: int, total: int, params: dict[str, Any]) -> None:
        """A trial of this configuration (its user attributes) starts."""
        return None

    def epoch_finished(self, event: EpochEvent) -> None:
        """The running trial ended an epoch (window)."""
        return None

    def trial_progress(self, event: ProgressEvent) -> None:
        """The running trial is ``event.samples`` of ``event.total_samples`` in."""
        return None

    def trial_finished(self, number: int, outcome: TrialOutcome) -> None:
        """The trial ended with ``outcome``."""
        return None

    def note(self, message: str) -> None:
        """Something the user should read (a phase starting, a baseline failing)."""
        return None

    def planned(self, plan: SearchPlan) -> None:
        """The trainings the search will run, by phase, before its first child."""
        return None

    def phase(self, name: str, trainings: int) -> None:
        """Phase ``name`` (of :data:`tuner.core.plan.PHASES`) runs ``trainings`` from now: the
        baseline's runs (0: reused), the seeds', a racing round's repeats."""
        return None

    def training_started(self, label: str) -> None:
        """A training that is no trial starts (the check, a baseline or seed run)."""
        return None

    def training_finished(self) -> None:
        """The training :meth:`training_started` announced ended."""
        return None


class QuietObserver(SearchObserver):
    """A :class:`SearchObserver` that shows nothing."""


def observed(runner: ChildRunner, observer: SearchObserver, label: str) -> ChildRunner:
    """``runner`` telling ``observer`` when each child it runs starts and ends (as a training
    labelled ``label``): the check's, the baseline's and the seeds' children, which are no
    trials, count in the progress and its ETA too."""
    return _Observed(runner, observer, label)


class _Observed:
    def __init__(self, runner: ChildRunner, observer: SearchObserver, label: str) -> None:
        self._runner, self._observer, self._label = runner, observer, label

    def run(
        self,
        request: Request,
        env: dict[str, str],
        timeout_s: float,
        on_event: OnEvent | None = None,
    ) -> ChildRun:
        self._observer.training_started(self._label)
        try:
            # A child nobody else listens to: its epochs and steps move the running bar.
            progress = on_event or partial(passed_on, self._observer)
            return self._runner.run(request, env, timeout_s, progress)
        finally:
            self._observer.training_finished()


def passed_on(observer: SearchObserver, event: Event) -> None:
    """Pass a child's event on to ``observer`` by its kind; other kinds are not progress."""
    if isinstance(event, EpochEvent):
        observer.epoch_finished(event)
    elif isinstance(event, ProgressEvent):
        observer.trial_progress(event)


def quiet_optuna() -> None:
    """Silence Optuna's own INFO lines (tuner says what each trial did), unless tuner logs at
    DEBUG (``tuner -v``), which passes them on."""
    if not logging.getLogger(LOGGER).isEnabledFor(logging.DEBUG):
        logging.getLogger("optuna").setLevel(logging.ERROR)
