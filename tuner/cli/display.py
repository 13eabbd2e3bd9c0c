"""Terminal output with rich: the live search progress, the trials table, the recommendation.

Every text that can quote the user (study names, paths, spec values, model references, a trial's
error) is printed as a :class:`rich.text.Text` or through :func:`say`, never as markup: rich
would read ``[bold]`` or ``[/]`` in it as a tag and eat it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from optuna.trial import FrozenTrial
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from tuner.core.outcome import TrialOutcome
from tuner.views.summary import STATUS_COLUMN, TRIAL_COLUMNS, recommendation_rows, trial_rows

if TYPE_CHECKING:
    from tuner.core.devices import DevicePlan
    from tuner.core.spec import StudySpec

_STATUS_STYLE = {
    "ok": "green",
    "oom": "yellow",
    "oom-implied": "yellow",
    "diverged": "magenta",
    "timeout": "red",
    "crashed": "red",
    "error": "red",
    "interrupted": "red",
    "running": "cyan",
}


def say(console: Console, text: str, style: str = "") -> None:
    """Print ``text`` literally, on one line however wide (no markup, no highlighting, no
    wrapping): a line that quotes the user's own words."""
    console.print(Text(text, style=style), soft_wrap=True)


def status_text(status: str) -> Text:
    """A trial's status in its colour."""
    return Text(status, style=_STATUS_STYLE.get(status, "white"))


class SearchProgress:
    """A :class:`tuner.driver.objective.SearchObserver` drawn as two rich progress bars (trials,
    epochs)."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self._trials = self._progress.add_task("trials", total=None)
        self._epochs = self._progress.add_task("epochs", total=None, visible=False)

    def __enter__(self) -> SearchProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def trial_started(self, index: int, total: int, params: dict[str, Any]) -> None:
        self._progress.update(
            self._trials,
            total=total,
            completed=index - 1,
            description=(
                f"trial {index}/{total}: batch {params['global_batch_size']} "
                f"({params['per_replica_batch_size']}/replica), {params['lr_rule']} "
                f"lr={params['learning_rate']:.3g}"
            ),
        )
        self._progress.update(self._epochs, completed=0, total=None, visible=False)

    def epoch_finished(self, event: dict[str, Any]) -> None:
        self._progress.update(
            self._epochs,
            total=event["epochs"],
            completed=event["epoch"],
            visible=True,
            description=f"epochs (loss {event['loss']:.4g}, {event['throughput']:,.0f} samples/s)",
        )

    def note(self, message: str) -> None:
        say(self._console, f"  {message}")

    def trial_finished(self, number: int, outcome: TrialOutcome) -> None:
        self._progress.advance(self._trials)
        detail = (
            f"loss {outcome.values[0]:.4g}, {outcome.values[1]:,.0f} samples/s"
            if outcome.values
            else (outcome.error or "")
        )
        line = Text.assemble(f"  trial {number}: ", status_text(outcome.status), f" {detail}")
        line.truncate(300)
        self._console.print(line, soft_wrap=True)


def search_banner(spec: StudySpec, plan: DevicePlan, study_name: str | None) -> str:
    """The line that says what a search is about to run, and on what."""
    joint = f"{spec.search.trials} trials of model hyperparameters × " if spec.search.joint else ""
    shape = (
        f"{joint}{len(spec.search.global_batch_sizes)} batch sizes × "
        f"{len(spec.search.lr_rules)} rules"
    )
    return (
        f"study {study_name or spec.name!r}: {shape} on {plan.num_replicas} {plan.kind} "
        "replicas; checking the workload…"
    )


def probe_summary(found: dict[str, Any], num_replicas: int) -> str:
    """One line: the largest global batch that fits, where memory ran out, what it cost."""
    largest, oom = found["largest_fitting_batch"], found["smallest_oom_batch"]
    return (
        f"largest global batch that fits on {found['device_signature']}: {largest} "
        f"({largest // num_replicas if largest else 0} per replica); "
        + (f"out of memory at {oom}" if oom else "no out-of-memory up to the training set")
        + f" — {found['launches']} launches in {found['wall_s']:.0f} s"
    )


def trials_table(trials: Iterable[FrozenTrial], title: str) -> Table:
    """The trials as a table: status, batch, per-replica batch, rule, LR, throughput, losses."""
    table = Table(title=Text(title), title_justify="left")
    for column, justify in TRIAL_COLUMNS:
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for cells in trial_rows(trials):
        row = [Text(cell) for cell in cells]
        row[STATUS_COLUMN] = status_text(cells[STATUS_COLUMN])
        table.add_row(*row)
    return table


def recommendation_table(rec: dict[str, Any]) -> Table:
    """The recommendation as a two-column table."""
    table = Table(title="Recommendation", title_justify="left", show_header=False)
    table.add_column(style="bold")
    table.add_column()
    for key, value in recommendation_rows(rec):
        table.add_row(Text(key), Text(value))
    return table


def print_validation(console: Console, report: dict[str, Any]) -> None:
    """The validate report: one row per check, then the verdict."""
    table = Table(
        title=Text(
            f"Validation: {report['loop']} loop, updates on {report['update_on']}, global batch "
            f"{report['global_batch_size']} = {report['num_replicas']} × "
            f"{report['per_replica_batch_size']}, {report['steps']} steps, lr "
            f"{report['learning_rate']:.4g} ({report['lr_rule']})"
        ),
        title_justify="left",
    )
    table.add_column("check")
    table.add_column("result")
    table.add_column("figures")
    for name, check in report["checks"].items():
        verdict = Text("pass", "green") if check["passed"] else Text("FAIL", "bold red")
        table.add_row(Text(name.replace("_", " ")), verdict, Text(str(check["summary"])))
    console.print(table)
    parity = report["checks"]["loss_parity"]
    if parity.get("compared", True):  # no curve where the runs need not see the same batches
        one, many = parity["single_device_losses"], parity["replica_losses"]
        every = max(1, len(one) // 5)
        curve = ", ".join(
            f"step {i + 1}: {one[i]:.5g} vs {many[i]:.5g}"
            for i in range(0, min(len(one), len(many)), every)
        )
        say(console, f"loss, one device vs {report['num_replicas']} replicas — {curve}")
    if report["passed"]:
        console.print("[bold green]all checks passed[/]")
    else:
        console.print("[bold red]validation failed[/]")
