"""The commands that look at a stored study: ``export``, ``show``, ``dashboard``, ``report``."""

from __future__ import annotations

import contextlib
import json
import sys
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from tuner.cli import options
from tuner.cli.errors import guard
from tuner.cli.options import StorageOpt, StudyNameOpt, value, write_json
from tuner.console.logs import say_info
from tuner.console.pages import out, warn
from tuner.console.signals import sigterm_as_interrupt
from tuner.core.errors import ConfigError, NoCompleteTrialError
from tuner.core.recommend import DEFAULT_TIE_MARGIN, DEFAULT_TOLERANCE, POLICY
from tuner.core.record import decode_study
from tuner.files import check_output
from tuner.storage import DEFAULT_STORAGE, READING_WAIT_S, mask_password, storage_read_only
from tuner.views import DASHBOARD_HOST, DASHBOARD_PORT

OutputOpt = Annotated[
    Path | None,
    typer.Option(
        "--output", "-o", "--export", help="Write here instead of stdout (--export as in search)."
    ),
]

TieMarginOpt = Annotated[
    float | None,
    typer.Option(
        help="Candidates whose throughput (goodput, time to target) is within this relative "
        "margin of the best are practically equal: the smallest global batch of them is "
        "picked. Beyond it the better measured value is. At one global batch the lower final "
        "loss is picked, whatever the throughput.",
        show_default=str(DEFAULT_TIE_MARGIN),
    ),
]


ReadingWaitOpt = Annotated[
    float,
    typer.Option(
        "--storage-wait",
        help="Seconds to wait for a storage out of reach (server down or restarting, file "
        "locked) when opening it, before stopping.",
    ),
]


def _check_margin(tie_margin: float | None) -> None:
    if tie_margin is not None and not 0 <= tie_margin < 1:
        raise ConfigError(f"--tie-margin must be in [0, 1), got {tie_margin}")


def export_cmd(
    storage: StorageOpt = DEFAULT_STORAGE,
    study_name: StudyNameOpt = None,
    storage_wait: ReadingWaitOpt = READING_WAIT_S,
    output: OutputOpt = None,
    tolerance: Annotated[
        float | None,
        typer.Option(
            help="Final-loss tolerance relative to the best trial (raised to 2 × the measured "
            "seed spread when that is larger).",
            show_default=f"the study's, else {DEFAULT_TOLERANCE}",
        ),
    ] = None,
    policy: Annotated[
        options.Policy | None,
        typer.Option(
            help="loss-then-throughput (fastest within the loss tolerance), goodput "
            "(highest throughput × statistical efficiency within it) or time-to-target "
            "(shortest training time to the study's --target-loss).",
            show_default=f"time-to-target with a target, else {POLICY}",
        ),
    ] = None,
    update_note: Annotated[
        bool,
        typer.Option(
            "--update-note",
            help="Also rewrite the study's dashboard note and plots from this recommendation "
            "(with this --tolerance and --policy); by default export writes nothing to the "
            "storage and the note stays as `tuner search` left it.",
        ),
    ] = False,
    tie_margin: TieMarginOpt = None,
) -> None:
    """Write the recommended-config JSON of a study (with --update-note, also its dashboard note
    and plots)."""
    from tuner.results import load_study, recommendation

    def call() -> None:
        if tolerance is not None and not 0 <= tolerance < 1:
            raise ConfigError(f"--tolerance must be in [0, 1), got {tolerance}")
        _check_margin(tie_margin)
        if output is not None:  # refused before the note and plots are rewritten
            check_output(output, "--output")
        study = load_study(storage, study_name, storage_wait=storage_wait)
        rec = recommendation(
            study, tolerance, value(policy), storage_url=storage, tie_margin=tie_margin
        )
        if update_note:
            _update_note(study, rec, storage)
        if output is None:
            sys.stdout.write(json.dumps(rec, indent=2) + "\n")
        else:
            write_json(output, rec, "recommended config")

    guard(call)


def _update_note(study: Any, rec: dict[str, Any], storage: str) -> None:
    """``export --update-note``: the note and plots from ``rec``; a read-only storage warns."""
    from tuner.views.refresh import refresh

    read_only = storage_read_only(storage)
    if read_only:
        warn(
            f"the dashboard note and plots were not updated: the storage is read-only ({read_only})"
        )
    else:
        refresh(study, rec, warn=warn)


def show(
    storage: StorageOpt = DEFAULT_STORAGE,
    study_name: StudyNameOpt = None,
    storage_wait: ReadingWaitOpt = READING_WAIT_S,
    all_trials: Annotated[
        bool, typer.Option("--all", help="Every trial, retries and duplicates included.")
    ] = False,
    wide: Annotated[
        bool,
        typer.Option(
            "--wide", help="Every column, even where the table gets wider than the terminal."
        ),
    ] = False,
    fmt: Annotated[
        options.ShowFormat,
        typer.Option(
            "--format",
            help="table (the columns that fit the terminal, or COLUMNS), or json / csv: every "
            "stored field of each trial at full precision, on stdout alone.",
        ),
    ] = options.ShowFormat.table,
    tie_margin: TieMarginOpt = None,
) -> None:
    """Print a study's trials as a table (one row per grid point unless --all)."""
    from tuner.core.configurations import unique_trials
    from tuner.results import load_study
    from tuner.views.records import records_text

    def call() -> None:
        _check_margin(tie_margin)
        study = load_study(storage, study_name, storage_wait=storage_wait)
        trials = study.get_trials(deepcopy=False)
        shown = trials if all_trials else unique_trials(trials)
        if fmt is options.ShowFormat.table:
            _show_table(study, trials, shown, storage, wide=wide, tie_margin=tie_margin)
        else:
            sys.stdout.write(records_text(shown, fmt.value))

    guard(call)


def _show_table(
    study: Any, trials: list[Any], shown: list[Any], storage: str, *, wide: bool,
    tie_margin: float | None,
) -> None:  # fmt: skip
    """``tuner show``'s table, then what the study answers."""
    from tuner.console import display as _display
    from tuner.driver.trial.spooled import spooled_at
    from tuner.results import recommendation
    from tuner.views.summary import budget_lines, hidden_columns, trial_rows, wide_hint

    title = f"Study {study.study_name}"
    if len(shown) < len(trials):
        title += f" ({len(shown)} grid points; {len(trials)} trials with --all)"
    table = _display.trials_table(shown, title, out.width, wide, every=trials)
    out.print(table, crop=False)
    hidden = [] if wide else hidden_columns(trial_rows(shown), out.width)
    if hidden:  # on stderr: the table on stdout stays as it was
        say_info(wide_hint(hidden))
    spooled = spooled_at(storage, study.study_name)  # RUNNING rows whose result waits
    if spooled:
        warn(spooled)
    # A terminal's rows hold the table and the answer; the details fold when they would not.
    room = None if wide or not out.is_terminal else out.height - _display.height(out, table) - 2
    with contextlib.suppress(NoCompleteTrialError):  # nothing to recommend yet
        rec = recommendation(study, tie_margin=tie_margin)
        _display.print_recommendation(out, rec, room)
    for line in budget_lines(decode_study(study).flat):  # the answer is budget-limited (or quick)
        out.print(escape(line), highlight=False)


def dashboard(
    storage: StorageOpt = DEFAULT_STORAGE,
    storage_wait: ReadingWaitOpt = READING_WAIT_S,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = DASHBOARD_HOST,
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="Port to listen on (0: any free port).")
    ] = DASHBOARD_PORT,
    allow_writes: Annotated[
        bool,
        typer.Option(
            "--allow-writes",
            help="Let the page change the storage (delete, create and rename studies, write "
            "notes and trial values); read-only without it.",
        ),
    ] = False,
) -> None:
    """Browse the studies of a storage in optuna-dashboard, read-only (Ctrl-C stops it)."""
    from tuner.extras import require_extra
    from tuner.views.dashboard import exposure_warning, serve
    from tuner.views.refresh import write_missing

    def ready(url: str) -> None:  # plain print: one line that scripts can read, never wrapped
        warning = exposure_warning(host)  # once listening: a port in use is not exposed
        if warning:
            warn(warning)
        print(
            f"optuna-dashboard for {mask_password(storage)} at {url} (Ctrl-C stops it)", flush=True
        )

    def call() -> None:
        require_extra("dashboard", "tuner dashboard")
        try:
            with sigterm_as_interrupt():
                serve(
                    storage,
                    host,
                    port,
                    on_ready=ready,
                    storage_wait=storage_wait,
                    allow_writes=allow_writes,
                    prepare=partial(write_missing, storage_url=storage, say=say_info, warn=warn),
                )
        except KeyboardInterrupt:
            say_info("dashboard stopped")

    guard(call)


def report(
    storage: StorageOpt = DEFAULT_STORAGE,
    study_name: StudyNameOpt = None,
    storage_wait: ReadingWaitOpt = READING_WAIT_S,
    output: Annotated[Path, typer.Option("--output", "-o", help="The HTML file to write.")] = Path(
        "report.html"
    ),
    fmt: Annotated[
        options.ReportFormat,
        typer.Option("--format", help="html, or png for the plots as PNG images as well."),
    ] = options.ReportFormat.html,
) -> None:
    """Write a self-contained HTML report: recommendation, plots, Pareto front, trials."""
    from tuner.extras import require_extra
    from tuner.results import current_recommendation, load_study
    from tuner.views.report import write_report

    def call() -> None:
        require_extra("report", "tuner report")
        if fmt is options.ReportFormat.png:
            require_extra("png", "tuner report --format png")
        check_output(output, "--output")
        study = load_study(storage, study_name, storage_wait=storage_wait)
        for path in write_report(
            study, current_recommendation(study), output, png=fmt is options.ReportFormat.png
        ):
            say_info(f"wrote {path}")

    guard(call)
