"""The commands that look at a stored study: ``export`` (which also refreshes the dashboard note
and plots), ``show``, ``dashboard`` and ``report``."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from tuner.cli.errors import guard, sigterm_as_interrupt
from tuner.cli.options import (
    StorageOpt,
    StudyNameOpt,
    check_output,
    err,
    out,
    warn,
    write_json,
)
from tuner.core.errors import ConfigError, NoCompleteTrialError
from tuner.core.policy import DEFAULT_TOLERANCE, POLICIES, POLICY
from tuner.core.spec import DEFAULT_STUDY_NAME
from tuner.storage import DEFAULT_STORAGE, mask_password, storage_read_only
from tuner.views import DASHBOARD_HOST, DASHBOARD_PORT

OutputOpt = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")
]


def export_cmd(
    storage: StorageOpt = DEFAULT_STORAGE,
    study_name: StudyNameOpt = DEFAULT_STUDY_NAME,
    output: OutputOpt = None,
    tolerance: Annotated[
        float, typer.Option(help="Final-loss tolerance relative to the best trial.")
    ] = DEFAULT_TOLERANCE,
    policy: Annotated[
        str,
        typer.Option(
            help="loss-then-throughput (fastest within the loss tolerance) or goodput "
            "(highest throughput × statistical efficiency within it)."
        ),
    ] = POLICY,
) -> None:
    """Write the recommended-config JSON of a study (and refresh its dashboard note and plots)."""
    from tuner.results import load_study, recommendation
    from tuner.views.refresh import refresh

    def call() -> None:
        if not 0 <= tolerance < 1:
            raise ConfigError(f"--tolerance must be in [0, 1), got {tolerance}")
        if policy not in POLICIES:
            raise ConfigError(f"--policy must be one of {', '.join(POLICIES)}, got {policy!r}")
        if output is not None:  # refused before the note and plots are rewritten
            check_output(output, "--output")
        study = load_study(storage, study_name)
        rec = recommendation(study, tolerance, policy)
        read_only = storage_read_only(storage)
        if read_only:
            warn(
                "the dashboard note and plots were not updated: the storage is read-only "
                f"({read_only})"
            )
        else:
            refresh(study, rec, warn=warn)
        if output is None:
            sys.stdout.write(json.dumps(rec, indent=2) + "\n")
        else:
            write_json(output, rec)
            err.print(f"recommended config written to {escape(str(output))}", highlight=False)

    guard(call)


def show(
    storage: StorageOpt = DEFAULT_STORAGE,
    study_name: StudyNameOpt = DEFAULT_STUDY_NAME,
    all_trials: Annotated[
        bool, typer.Option("--all", help="Every trial, retries and duplicates included.")
    ] = False,
) -> None:
    """Print a study's trials as a table (one row per grid point unless --all)."""
    from tuner.cli import display as _display
    from tuner.core.recommend import unique_trials
    from tuner.results import load_study, recommendation

    def call() -> None:
        study = load_study(storage, study_name)
        trials = study.get_trials(deepcopy=False)
        shown = trials if all_trials else unique_trials(trials)
        title = f"Study {study_name}"
        if len(shown) < len(trials):
            title += f" ({len(shown)} grid points; {len(trials)} trials with --all)"
        out.print(_display.trials_table(shown, title))
        with contextlib.suppress(NoCompleteTrialError):  # nothing to recommend yet
            out.print(_display.recommendation_table(recommendation(study)))

    guard(call)


def dashboard(
    storage: StorageOpt = DEFAULT_STORAGE,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = DASHBOARD_HOST,
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="Port to listen on (0: any free port).")
    ] = DASHBOARD_PORT,
) -> None:
    """Browse the studies of a storage in optuna-dashboard (Ctrl-C stops it)."""
    from tuner.views.dashboard import exposure_warning, serve

    def ready(url: str) -> None:  # plain print: one line that scripts can read, never wrapped
        warning = exposure_warning(host)  # once listening: a port in use is not exposed
        if warning:
            warn(warning)
        print(
            f"optuna-dashboard for {mask_password(storage)} at {url} (Ctrl-C stops it)", flush=True
        )

    def call() -> None:
        try:
            with sigterm_as_interrupt():
                serve(storage, host, port, on_ready=ready)
        except KeyboardInterrupt:
            err.print("dashboard stopped")

    guard(call)


def report(
    storage: StorageOpt = DEFAULT_STORAGE,
    study_name: StudyNameOpt = DEFAULT_STUDY_NAME,
    output: Annotated[Path, typer.Option("--output", "-o", help="The HTML file to write.")] = Path(
        "report.html"
    ),
    fmt: Annotated[
        str,
        typer.Option("--format", help="html, or png for the plots as PNG images as well."),
    ] = "html",
) -> None:
    """Write a self-contained HTML report: recommendation, plots, Pareto front, trials."""
    from tuner.results import current_recommendation, load_study
    from tuner.views.report import write_report

    def call() -> None:
        if fmt not in ("html", "png"):
            raise ConfigError(f"--format must be html or png, got {fmt!r}")
        check_output(output, "--output")
        study = load_study(storage, study_name)
        for path in write_report(study, current_recommendation(study), output, png=fmt == "png"):
            err.print(f"wrote {escape(str(path))}", highlight=False)

    guard(call)
