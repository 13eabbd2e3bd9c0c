"""The commands that run children: ``search``, ``probe`` and ``validate``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from tuner.cli.errors import guard
from tuner.cli.options import parsed, takes, write_json
from tuner.console.logs import say_info
from tuner.console.pages import LineView, err, out
from tuner.console.search_view import SearchView
from tuner.core.errors import TunerError
from tuner.driver.options import ProbeOptions, SearchOptions, ValidateOptions

if TYPE_CHECKING:
    from tuner.driver.study import SearchReport


@takes("search")
def search(**flags: Any) -> None:
    """Run (or resume) a study: one short real training run per distinct grid point, then
    seeds and repeats where the decision is close."""
    code = guard(lambda: _search(parsed(SearchOptions, flags)))
    if code:  # a gang's follower that did not end with rank 0's "done"
        raise typer.Exit(code)


def _search(options: SearchOptions) -> int:
    """The library's search with live progress; on Ctrl-C or SIGTERM, print what was stored. A
    gang's follower (rank ≠ 0) follows rank 0 instead: its exit code."""
    from tuner.console import display
    from tuner.driver.search import follow
    from tuner.driver.search import search as run

    opened: list[Any] = []
    try:
        with SearchView() as view:
            followed = follow(options, view)  # a gang's rank ≠ 0: no study of its own
            if followed is not None:
                return followed
            report = run(options, view, on_study=opened.append)
    except KeyboardInterrupt:
        if opened:
            stopped = opened[0].get_trials(deepcopy=False)
            display.print_trials(out, stopped, f"Study {opened[0].study_name} (stopped)")
            err.print("what finished is stored; run the same command again to resume")
        raise
    _print_search(report, options.export, options.storage)
    return 0


def _print_search(report: SearchReport, export: Path | None, storage: str) -> None:
    """The study's trials and recommendation; the JSON written to ``export`` when given."""
    from tuner.console import display
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
        write_json(export, rec, "recommended config")


@takes("probe")
def probe_cmd(**flags: Any) -> None:
    """Find the largest global batch that fits: doubling until out-of-memory, then bisection."""
    guard(lambda: _probe(parsed(ProbeOptions, flags)))


def _probe(options: ProbeOptions) -> None:
    """Probe with the steps said as they run; print the largest fitting batch."""
    from tuner.console import display
    from tuner.driver.search import probe

    report = probe(options, LineView())
    display.say(out, display.probe_summary(report.found, report.plan.num_replicas))


@takes("validate")
def validate(**flags: Any) -> None:
    """Prove the multi-replica run is right: loss parity, final weights, weight sync, device use,
    learning rate."""
    code = guard(lambda: _validate(parsed(ValidateOptions, flags)))
    if code:  # a gang's follower that did not end with rank 0's "done"
        raise typer.Exit(code)


def _validate(options: ValidateOptions) -> int:
    """Run both children; print the checks, write the report when asked; fail when one fails.
    A gang's follower follows rank 0 instead: its exit code."""
    from tuner.console import display
    from tuner.driver.search import follow
    from tuner.driver.search import validate as run

    followed = follow(options, LineView())
    if followed is not None:
        return followed
    report = run(options, LineView())
    display.print_validation(out, report)
    if options.output is not None:
        write_json(options.output, report, "report")
    if not report["passed"]:
        raise TunerError("validation failed: see the checks above")
    return 0
