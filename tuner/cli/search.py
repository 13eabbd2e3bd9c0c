"""The commands that run trials into a study: ``search`` (the grid) and ``probe`` (the largest
global batch that fits). Each parses its flags into its options object
(:mod:`tuner.driver.options`), makes one library call and prints what came back."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from tuner.cli.errors import guard, sigterm_as_interrupt
from tuner.cli.logs import is_info_shown, say_info
from tuner.cli.options import LineView, err, out, parsed, takes, write_json
from tuner.driver.options import ProbeOptions, SearchOptions

if TYPE_CHECKING:
    from tuner.cli.progress import LogProgress, SearchProgress
    from tuner.core.devices import DevicePlan
    from tuner.core.outcome import TrialOutcome
    from tuner.core.plan import SearchPlan
    from tuner.core.protocol import EpochEvent, ProgressEvent
    from tuner.core.spec import StudySpec
    from tuner.driver.study import SearchReport


@takes("search")
def search(**flags: Any) -> None:
    """Run (or resume) a study: one short real training run per distinct grid point, then
    seeds and repeats where the decision is close."""
    guard(lambda: _search(parsed(SearchOptions, flags)))


def _search(options: SearchOptions) -> None:
    """The library's search with live progress; on Ctrl-C or SIGTERM, print what was stored."""
    from tuner.cli import display
    from tuner.driver.search import search as run

    opened: list[Any] = []
    try:
        with SearchView() as view:
            report = run(options, view, on_study=opened.append)
    except KeyboardInterrupt:
        if opened:
            stopped = opened[0].get_trials(deepcopy=False)
            display.print_trials(out, stopped, f"Study {opened[0].study_name} (stopped)")
            err.print("what finished is stored; run the same command again to resume")
        raise
    _print_search(report, options.export, options.storage)


class SearchView(LineView):
    """A search drawn on stderr (a :class:`tuner.driver.search.SearchFront`): its notices and
    warnings, the ``--validate`` table, the banner, then the live progress of its trials (bars or
    lines, :mod:`tuner.cli.progress`), which start with the banner; SIGTERM is Ctrl-C from then
    on."""

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
        from tuner.cli import display

        if not report["passed"] or is_info_shown():  # -q: the table only when it failed
            display.print_validation(err, report)

    def starting(self, spec: StudySpec, plan: DevicePlan, study_name: str | None) -> None:
        from tuner.cli import display, progress

        say_info(display.search_banner(spec, plan, study_name))
        several = len(spec.search.precisions) > 1  # the progress lines then name each precision
        view = progress.search_progress(err, several)
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


def _print_search(report: SearchReport, export: Path | None, storage: str) -> None:
    """The study's trials and recommendation; the JSON written to ``export`` when given."""
    from tuner.cli import display
    from tuner.core.configurations import unique_trials
    from tuner.core.trials import nothing_completed
    from tuner.results import recommendation

    if report.running:
        err.print(
            f"{report.running} grid point(s) still marked RUNNING: another worker is on them, "
            "or one that died and is not yet stale (run again after the heartbeat grace "
            "period to recover them)"
        )
    elif report.launched == 0:
        say_info(f"all {report.grid_size} grid points are already finished; nothing to run")
    every = report.study.get_trials(deepcopy=False)
    shown = unique_trials(every)
    display.print_trials(out, shown, f"Study {report.study.study_name}", every=every)
    # Say why nothing completed (not "run tuner search first": this was that run); while other
    # workers still run grid points, the recommendation's own error says there is none yet.
    failure = None if report.running else nothing_completed(report.study.study_name, shown)
    if failure is not None:
        raise failure
    rec = recommendation(report.study, storage_url=storage)
    display.print_recommendation(out, rec)
    if export is not None:
        write_json(export, rec)
        say_info(f"recommended config written to {export}")


@takes("probe")
def probe_cmd(**flags: Any) -> None:
    """Find the largest global batch that fits: doubling until out-of-memory, then bisection."""
    guard(lambda: _probe(parsed(ProbeOptions, flags)))


def _probe(options: ProbeOptions) -> None:
    """Probe with the steps said as they run; print the largest fitting batch."""
    from tuner.cli import display
    from tuner.driver.search import probe

    report = probe(options, LineView())
    display.say(out, display.probe_summary(report.found, report.plan.num_replicas))
