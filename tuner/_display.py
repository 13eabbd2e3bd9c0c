"""Terminal output with rich: the live search progress, the trials table, the recommendation."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from optuna.trial import FrozenTrial
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from tuner.outcome import TrialOutcome
from tuner.recommend import status_of

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


class SearchProgress:
    """A :class:`tuner.study.SearchObserver` drawn as two rich progress bars (trials, epochs)."""

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
        self._console.print(f"  {message}")

    def trial_finished(self, number: int, outcome: TrialOutcome) -> None:
        self._progress.advance(self._trials)
        style = _STATUS_STYLE.get(outcome.status, "white")
        detail = (
            f"loss {outcome.values[0]:.4g}, {outcome.values[1]:,.0f} samples/s"
            if outcome.values
            else (outcome.error or "")
        )
        self._console.print(f"  trial {number}: [{style}]{outcome.status}[/] {detail}"[:300])


def trials_table(trials: Iterable[FrozenTrial], title: str) -> Table:
    """The trials as a table: status, batch, per-replica batch, rule, LR, throughput, losses."""
    table = Table(title=title, title_justify="left")
    for column, justify in [
        ("#", "right"),
        ("state", "left"),
        ("status", "left"),
        ("global batch", "right"),
        ("per replica", "right"),
        ("replicas", "right"),
        ("rule", "left"),
        ("LR", "right"),
        ("samples/s", "right"),
        ("final loss", "right"),
        ("train loss", "right"),
        ("note", "left"),
    ]:
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for trial in sorted(trials, key=lambda t: t.number):
        attrs = trial.user_attrs
        status = status_of(trial)
        table.add_row(
            str(trial.number),
            trial.state.name,
            f"[{_STATUS_STYLE.get(status, 'white')}]{status}[/]",
            _fmt(attrs.get("global_batch_size", trial.params.get("global_batch_size")), "d"),
            _fmt(attrs.get("per_replica_batch_size"), "d"),
            _fmt(attrs.get("num_replicas"), "d"),
            str(attrs.get("lr_rule", trial.params.get("lr_rule", "-"))),
            _fmt(attrs.get("learning_rate"), ".3g"),
            _fmt(attrs.get("throughput"), ",.0f"),
            _fmt(attrs.get("final_loss"), ".4g"),
            _fmt(attrs.get("train_loss"), ".4g"),
            str(attrs.get("error", ""))[:60],
        )
    return table


def recommendation_table(rec: dict[str, Any]) -> Table:
    """The recommendation as a two-column table."""
    table = Table(title="Recommendation", title_justify="left", show_header=False)
    table.add_column(style="bold")
    table.add_column()
    rows = [
        (
            "global batch size",
            f"{rec['global_batch_size']} ({rec['per_replica_batch_size']} per "
            f"replica × {rec['num_replicas']})",
        ),
        (
            "learning rate",
            f"{rec['learning_rate']:.4g} (rule {rec['lr_rule']}, base "
            f"{rec['base_lr']:.4g} at batch {rec['base_batch_size']})",
        ),
        ("throughput", f"{rec['throughput']:,.0f} samples/s"),
        ("final loss", f"{rec['final_loss']:.5g}"),
        ("largest feasible batch", str(rec["largest_feasible_batch_size"])),
        ("out-of-memory sizes", ", ".join(map(str, rec["oom_batch_sizes"])) or "none"),
        (
            "trial",
            f"#{rec['trial_number']} ({rec['policy']}, loss tolerance {rec['loss_tolerance']:.0%})",
        ),
    ]
    if rec.get("speedup_vs_single_device"):
        rows.append(
            (
                "vs one device",
                f"{rec['speedup_vs_single_device']:.2f}× the single-device baseline "
                f"({rec['baseline_throughput']:,.0f} samples/s at batch {rec['base_batch_size']}); "
                f"scaling efficiency {rec['scaling_efficiency']:.2f}",
            )
        )
    if rec.get("probe"):
        probe = rec["probe"]
        rows.append(
            (
                "probe",
                f"largest fitting batch {probe['largest_fitting_batch']}, out of memory at "
                f"{probe['smallest_oom_batch'] or 'none up to the training set'} "
                f"({probe['launches']} launches)",
            )
        )
    if rec.get("note"):
        rows.append(("note", rec["note"]))
    for key, value in rows:
        table.add_row(key, value)
    return table


def _fmt(value: Any, spec: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    try:
        return format(value, spec)
    except (TypeError, ValueError):
        return str(value)


def print_validation(console: Console, report: dict[str, Any]) -> None:
    """The validate report: one row per check, then the verdict."""
    table = Table(
        title=(
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
        verdict = "[green]pass[/]" if check["passed"] else "[bold red]FAIL[/]"
        table.add_row(name.replace("_", " "), verdict, check["summary"])
    console.print(table)
    parity = report["checks"]["loss_parity"]
    one, many = parity["single_device_losses"], parity["replica_losses"]
    every = max(1, len(one) // 5)
    curve = ", ".join(
        f"step {i + 1}: {one[i]:.5g} vs {many[i]:.5g}"
        for i in range(0, min(len(one), len(many)), every)
    )
    console.print(f"loss, one device vs {report['num_replicas']} replicas — {curve}")
    if report["passed"]:
        console.print("[bold green]all checks passed[/]")
    else:
        console.print("[bold red]validation failed[/]")
