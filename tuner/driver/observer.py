"""What the driver reports while a search works; the CLI draws it (rich bars on a terminal,
timestamped lines elsewhere: :mod:`tuner.cli.progress`)."""

from __future__ import annotations

import logging
from typing import Any, Protocol

from tuner.core.outcome import TrialOutcome
from tuner.core.protocol import EpochEvent, ProgressEvent

LOGGER = "tuner"
"""The root of tuner's loggers; the CLI's ``-q``/``-v`` set its level."""


class SearchObserver(Protocol):
    """Progress of a search: trials starting and finishing, the child's epochs and steps, and
    one-line notes.

    ``number`` is the Optuna trial number (what ``tuner show`` lists in ``#``); ``position`` of
    ``total`` counts the trials of the grid (or joint budget), this worker's first one after those
    already finished. Events are the child's (:class:`tuner.core.protocol.EpochEvent`,
    :class:`~tuner.core.protocol.ProgressEvent`), passed on from the runner's reader thread.
    """

    def trial_started(self, number: int, position: int, total: int, params: dict[str, Any]) -> None:
        """A trial of this configuration (its user attributes) starts."""

    def epoch_finished(self, event: EpochEvent) -> None:
        """The running trial ended an epoch (window)."""

    def trial_progress(self, event: ProgressEvent) -> None:
        """The running trial is ``event.samples`` of ``event.total_samples`` in."""

    def trial_finished(self, number: int, outcome: TrialOutcome) -> None:
        """The trial ended with ``outcome``."""

    def note(self, message: str) -> None:
        """Something the user should read (a phase starting, a baseline failing)."""


class QuietObserver:
    """A :class:`SearchObserver` that shows nothing."""

    def note(self, message: str) -> None:
        pass

    def trial_started(self, number: int, position: int, total: int, params: dict[str, Any]) -> None:
        pass

    def epoch_finished(self, event: EpochEvent) -> None:
        pass

    def trial_progress(self, event: ProgressEvent) -> None:
        pass

    def trial_finished(self, number: int, outcome: TrialOutcome) -> None:
        pass


def quiet_optuna() -> None:
    """Silence Optuna's own INFO lines (tuner says what each trial did), unless tuner logs at
    DEBUG (``tuner -v``), which passes them on."""
    if not logging.getLogger(LOGGER).isEnabledFor(logging.DEBUG):
        logging.getLogger("optuna").setLevel(logging.ERROR)
