"""Terminal output with rich: the trials table and the recommendation. Every text that can quote
the user is a :class:`rich.text.Text` or goes through :func:`say`, never markup: rich would read
``[bold]`` or ``[/]`` in it as a tag and eat it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from optuna.trial import FrozenTrial
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tuner.views.law_figure import law_text
from tuner.views.recommendation import answer_text
from tuner.views.summary import (
    STATUS_COLUMN,
    TRIAL_COLUMNS,
    recommendation_rows,
    trial_layout,
    trial_rows,
)

if TYPE_CHECKING:
    from tuner.core.devices import DevicePlan
    from tuner.core.spec import StudySpec

_STATUS_STYLE = {
    **dict.fromkeys(("batch-failed", "timeout", "crashed", "error", "interrupted"), "red"),
    **dict.fromkeys(("oom", "oom-implied"), "yellow"),
    **dict.fromkeys(("bracketed", "dominated"), "blue"),
    "ok": "green",
    "diverged": "magenta",
    "running": "cyan",
}


def say(console: Console, text: str, style: str = "") -> None:
    """Print ``text`` literally on one line (no markup, highlighting or wrapping)."""
    console.print(Text(text, style=style), soft_wrap=True)


def status_text(status: str) -> Text:
    """A trial's status in its colour."""
    return Text(status, style=_STATUS_STYLE.get(status, "white"))


def search_banner(spec: StudySpec, plan: DevicePlan, study_name: str | None) -> str:
    """The line that says what a search is about to run, and on what."""
    grid = spec.search.grid
    joint = f"{grid.trials} trials of model hyperparameters × " if grid.joint else ""
    shape = f"{joint}{len(grid.global_batch_sizes)} batch sizes × {len(grid.lr_rules)} rules"
    if len(grid.precisions) > 1:
        shape += f" × {len(grid.precisions)} precisions"
    backend = " (jax)" if spec.workload.backend == "jax" else ""
    return (
        f"study {study_name or spec.name!r}: {shape} on {plan.num_replicas} {plan.kind} "
        f"replicas{backend}; checking the workload…"
    )


def probe_summary(found: dict[str, Any], num_replicas: int) -> str:
    """One line: the largest global batch that fits, where memory ran out, what it cost."""
    largest, oom = found["largest_fitting_batch"], found["smallest_oom_batch"]
    return (
        f"largest global batch that fits on {found['device_signature']}: {largest} "
        f"({largest // num_replicas if largest else 0} per replica); "
        + (f"out of memory at {oom}" if oom else "no out-of-memory up to the training set")
        + f" — {_count(len(found.get('attempts', [])), 'size')} tried in "
        + f"{_count(found['launches'], 'child', 'children')}, {found['wall_s']:.0f} s"
    )


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def trials_table(
    trials: Iterable[FrozenTrial],
    title: str,
    width: int,
    wide: bool = False,
    every: Sequence[FrozenTrial] | None = None,
) -> Table:
    """The trials as a table at most ``width`` wide, no number ever cut (``wide``: every column).
    ``every``: all the study's trials, so a row names its configuration's runs."""
    rows = trial_rows(trials, every=every)
    layout = trial_layout(rows, width, wide)
    table = Table(
        title=Text(title),
        title_justify="left",
        show_edge=False,  # the frame and edge padding would cost four columns of numbers
        pad_edge=False,
        width=layout.width,
    )
    for index, size in zip(layout.columns, layout.widths, strict=True):
        header, justify = TRIAL_COLUMNS[index]
        table.add_column(header, justify=justify, width=size, overflow="fold")  # type: ignore[arg-type]
    for cells in rows:
        row = [
            status_text(cells[i]) if i == STATUS_COLUMN else Text(cells[i]) for i in layout.columns
        ]
        table.add_row(*row)
    return table


def print_trials(
    console: Console,
    trials: Iterable[FrozenTrial],
    title: str,
    wide: bool = False,
    every: Sequence[FrozenTrial] | None = None,
) -> None:
    """Print :func:`trials_table` at the console's width (wider with ``wide``, uncut)."""
    console.print(trials_table(trials, title, console.width, wide, every), crop=False)


def print_recommendation(console: Console, rec: dict[str, Any], room: int | None = None) -> None:
    """The answer in plain words, the verdict, then the table behind them. With ``room`` (the
    terminal rows left), a table that would not fit is left out, and one line says where it is."""
    console.print()
    say(console, answer_text(rec), "bold")
    notes = [f"verdict: {rec.get('verdict')}"] if rec.get("verdict") else []
    if rec.get("lr_law"):  # the LR sweep's measured law (lr* ~ B^alpha), after the verdict
        notes.append(f"learning-rate law: {law_text(rec.get('lr_law'))}")
    lines = [Text(_unbroken(note)) for note in notes]  # wrapped at spaces: no number is cut
    for line in lines:
        console.print(line)
    table = recommendation_table(rec, verdict=False)
    if room is not None:
        room -= 2 + sum(height(console, line) for line in lines)
        if height(console, table) > room:
            say(console, DETAILS_HINT, "dim")
            return
    console.print(table)


DETAILS_HINT = "the recommendation's details: tuner show --wide, or tuner export"
"""Where the recommendation's table is when it did not fit the terminal's rows."""


def height(console: Console, renderable: Any) -> int:
    """The rows ``renderable`` takes at ``console``'s width."""
    return len(console.render_lines(renderable, console.options, pad=False))


def _unbroken(text: str) -> str:
    """``59 %`` as ``59%``: a terminal would wrap it into ``59`` and ``%``."""
    return text.replace(" %", "%")


def recommendation_table(rec: dict[str, Any], *, verdict: bool = True) -> Table:
    """The recommendation as a two-column table, wrapped at spaces; the verdict last, in bold."""
    table = Table(
        title="Recommendation",
        title_justify="left",
        show_header=False,
        show_edge=False,
        pad_edge=False,
    )
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in recommendation_rows(rec):
        if key == "verdict" and not verdict:
            continue
        table.add_row(Text(key), Text(_unbroken(value), style="bold" if key == "verdict" else ""))
    return table


def print_validation(console: Console, report: dict[str, Any]) -> None:
    """The validate report: a row per check, what was made deterministic, curves, the verdict."""
    table = Table(
        title=Text(
            f"Validation on {report.get('backend', 'tensorflow')}: {report['loop']} loop, "
            f"updates on {report['update_on']}, global batch "
            f"{report['global_batch_size']} = {report['num_replicas']} × "
            f"{report['per_replica_batch_size']}, {report['steps']} steps, lr "
            f"{report['learning_rate']:.4g} ({report['lr_rule']})"
        ),
        title_justify="left",
    )
    for header in ("check", "result", "figures"):
        table.add_column(header)
    for name, check in report["checks"].items():
        verdict = Text("pass", "green") if check["passed"] else Text("FAIL", "bold red")
        if check["passed"] and check.get("warning"):
            verdict = Text("pass, warning", "yellow")
        table.add_row(Text(name.replace("_", " ")), verdict, Text(str(check["summary"])))
    console.print(table)
    _print_validation_notes(console, report)
    warnings = report.get("warnings", [])
    if report["passed"]:
        more = f" ({len(warnings)} warning{'s' * (len(warnings) > 1)} below)" if warnings else ""
        console.print(f"[bold green]all checks passed[/]{more}")
    else:
        console.print("[bold red]validation failed[/]")
    for warning in warnings:
        say(console, f"warning: {warning}", "yellow")


def _print_validation_notes(console: Console, report: dict[str, Any]) -> None:
    """The layers made deterministic for the comparison, and the two loss curves."""
    for line in report.get("deterministic_layers", []):
        say(console, f"made deterministic: {line}")
    parity = report["checks"].get("loss_parity")  # none under --accumulation
    # No curve where the runs need not see the same batches.
    if parity and parity.get("compared", True):
        one, many = parity["single_device_losses"], parity["replica_losses"]
        every = max(1, len(one) // 5)
        curve = ", ".join(
            f"step {i + 1}: {one[i]:.5g} vs {many[i]:.5g}"
            for i in range(0, min(len(one), len(many)), every)
        )
        say(console, f"loss, one device vs {report['num_replicas']} replicas — {curve}")
