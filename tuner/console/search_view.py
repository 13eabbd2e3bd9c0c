"""A search drawn on the terminal, as ``tuner search`` and :func:`tuner.search` show it."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from tuner.console.logs import is_info_shown, say_info
from tuner.console.pages import LineView, err
from tuner.console.signals import sigterm_as_interrupt

if TYPE_CHECKING:
    from tuner.console.progress import LogProgress, SearchProgress
    from tuner.core.devices import DevicePlan
    from tuner.core.outcome import TrialOutcome
    from tuner.core.plan import SearchPlan
    from tuner.core.protocol import EpochEvent, ProgressEvent
    from tuner.core.spec import StudySpec


class SearchView(LineView):
    """A search drawn on stderr; SIGTERM is Ctrl-C from the banner on."""

    def __init__(self) -> None:
        self._stack = contextlib.ExitStack()
        self._progress: SearchProgress | LogProgress | None = None

    def __enter__(self) -> SearchView:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def warning(self, message: str) -> None:
        err.print(f"[yellow]{escape(message)}[/]")  # highlighted, unlike a notice

    def validated(self, report: dict[str, Any]) -> None:
        from tuner.console import display

        if not report["passed"] or is_info_shown():  # -q: the table only when it failed
            display.print_validation(err, report)

    def starting(self, spec: StudySpec, plan: DevicePlan, study_name: str | None) -> None:
        from tuner.console import display, progress

        say_info(display.search_banner(spec, plan, study_name))
        # Of several precisions, each progress line names its trial's.
        view = progress.search_progress(err, len(spec.search.grid.precisions) > 1)
        self._stack.enter_context(sigterm_as_interrupt())
        self._stack.enter_context(view)
        self._progress = view

    @property
    def _trials(self) -> SearchProgress | LogProgress:
        if self._progress is None:
            raise RuntimeError("a trial was reported before the search started")
        return self._progress

    def note(self, message: str) -> None:
        if self._progress is None:
            say_info(message)
        else:
            self._progress.note(message)

    def trial_started(self, number: int, position: int, total: int, params: dict[str, Any]) -> None:
        self._trials.trial_started(number, position, total, params)

    def epoch_finished(self, event: EpochEvent) -> None:
        self._trials.epoch_finished(event)

    def trial_progress(self, event: ProgressEvent) -> None:
        self._trials.trial_progress(event)

    def trial_finished(self, number: int, outcome: TrialOutcome) -> None:
        self._trials.trial_finished(number, outcome)

    def planned(self, plan: SearchPlan) -> None:
        self._trials.planned(plan)

    def phase(self, name: str, trainings: int) -> None:
        self._trials.phase(name, trainings)

    def training_started(self, label: str) -> None:
        self._trials.training_started(label)

    def training_finished(self) -> None:
        self._trials.training_finished()
