"""The ``tuner`` command line: each command parses, makes one library call, and prints.

Errors are mapped to one clean line and an exit code in one place (:func:`_exit_code`);
tracebacks only with ``--debug``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console

from tuner.errors import ConfigError, NoCompleteTrialError, TunerError
from tuner.storage import DEFAULT_STORAGE

app = typer.Typer(
    name="tuner",
    help="Measure which global batch size and learning-rate rule to use with MirroredStrategy.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
out = Console()
err = Console(stderr=True)
_state = {"debug": False}
T = TypeVar("T")

# The one error table: exception type -> exit code (first match wins).
_EXIT_CODES: list[tuple[type[BaseException], int]] = [
    (ConfigError, 2),
    (NoCompleteTrialError, 1),
    (TunerError, 1),
]

StorageOpt = Annotated[str, typer.Option("--storage", help="Optuna storage URL.")]
StudyNameOpt = Annotated[str, typer.Option("--study-name", help="Name of the study.")]


@app.callback()
def _main(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
) -> None:
    _state["debug"] = debug


def _exit_code(exc: BaseException) -> int:
    for kind, code in _EXIT_CODES:
        if isinstance(exc, kind):
            return code
    return 1


def _guard(call: Callable[[], T]) -> T:
    """Run ``call``; turn tuner's errors into one line on stderr and an exit code."""
    try:
        return call()
    except KeyboardInterrupt:
        err.print("[red]interrupted[/]")
        raise typer.Exit(130) from None
    except Exception as exc:
        if _state["debug"]:
            raise
        if isinstance(exc, TunerError):
            message = str(exc)
        else:
            message = f"internal error: {type(exc).__name__}: {exc} (run with --debug for details)"
        err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
        raise typer.Exit(_exit_code(exc)) from None


@app.command()
def search(
    study: Annotated[
        Path | None,
        typer.Option("--study", help="Study spec (TOML); default: built-in regression."),
    ] = None,
    gpus: Annotated[str | None, typer.Option(help="GPU indices, e.g. 0,1 (default: all).")] = None,
    cpu_replicas: Annotated[
        int | None, typer.Option(help="Run on N logical CPU devices instead of GPUs.")
    ] = None,
    storage: StorageOpt = DEFAULT_STORAGE,
    study_name: Annotated[
        str | None, typer.Option(help="Study name (default: the spec's name).")
    ] = None,
    base_batch_size: Annotated[int | None, typer.Option(help="Base global batch B.")] = None,
    batch_multipliers: Annotated[
        str | None, typer.Option(help="Global batches as multiples of B, e.g. 1,2,4.")
    ] = None,
    lr_rules: Annotated[
        str | None, typer.Option(help="Learning-rate rules: none,linear,sqrt.")
    ] = None,
    base_lr: Annotated[float | None, typer.Option(help="Learning rate at batch B.")] = None,
    epochs: Annotated[int | None, typer.Option(help="Epochs per trial (at least 2).")] = None,
    memory_limit: Annotated[
        str | None, typer.Option(help="Memory cap per device, e.g. 512MiB or 14GiB.")
    ] = None,
    trial_timeout: Annotated[
        float, typer.Option(help="Seconds before a trial is killed.")
    ] = 1800.0,
    export: Annotated[
        Path | None, typer.Option("--export", help="Write the recommended-config JSON here.")
    ] = None,
) -> None:
    """Run (or resume) a study: one short real training run per grid point."""
    from tuner import _display
    from tuner.devices import plan_devices
    from tuner.spec import load_spec, parse_int_list, parse_name_list
    from tuner.study import recommendation, run_search

    def call() -> None:
        if trial_timeout <= 0:
            raise ConfigError(f"--trial-timeout must be positive, got {trial_timeout}")
        overrides: dict[str, Any] = {
            "search.base_batch_size": base_batch_size,
            "search.base_lr": base_lr,
            "search.epochs": epochs,
            "search.batch_multipliers": batch_multipliers
            and parse_int_list(batch_multipliers, "--batch-multipliers"),
            "search.lr_rules": lr_rules and parse_name_list(lr_rules, "--lr-rules"),
        }
        spec = load_spec(study, overrides)
        plan, notice = plan_devices(gpus, cpu_replicas, memory_limit)
        if notice:
            err.print(f"[yellow]{notice}[/]")
        err.print(
            f"study {study_name or spec.name!r}: {len(spec.search.global_batch_sizes)} batch sizes "
            f"× {len(spec.search.lr_rules)} rules on {plan.num_replicas} {plan.kind} replicas; "
            "checking the workload…"
        )
        with _display.SearchProgress(err) as progress:
            report = run_search(
                spec,
                plan,
                storage,
                study_name=study_name,
                trial_timeout_s=trial_timeout,
                observer=progress,
            )
        if report.launched == 0:
            err.print(f"all {report.grid_size} grid points are already finished; nothing to run")
        trials = report.study.get_trials(deepcopy=False)
        out.print(_display.trials_table(trials, f"Study {report.study.study_name}"))
        rec = recommendation(report.study)
        out.print(_display.recommendation_table(rec))
        if export is not None:
            _write_json(export, rec)
            err.print(f"recommended config written to {export}")

    _guard(call)


@app.command("export")
def export_cmd(
    storage: StorageOpt = DEFAULT_STORAGE,
    study_name: StudyNameOpt = "regression",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")
    ] = None,
    tolerance: Annotated[
        float, typer.Option(help="Final-loss tolerance relative to the best trial.")
    ] = 0.02,
) -> None:
    """Write the recommended-config JSON of a study."""
    from tuner.study import load_study, recommendation

    def call() -> None:
        if not 0 <= tolerance < 1:
            raise ConfigError(f"--tolerance must be in [0, 1), got {tolerance}")
        rec = recommendation(load_study(storage, study_name), tolerance)
        if output is None:
            sys.stdout.write(json.dumps(rec, indent=2) + "\n")
        else:
            _write_json(output, rec)
            err.print(f"recommended config written to {output}")

    _guard(call)


@app.command()
def show(
    storage: StorageOpt = DEFAULT_STORAGE,
    study_name: StudyNameOpt = "regression",
) -> None:
    """Print a study's trials as a table."""
    from tuner import _display
    from tuner.study import load_study

    def call() -> None:
        study = load_study(storage, study_name)
        out.print(_display.trials_table(study.get_trials(deepcopy=False), f"Study {study_name}"))

    _guard(call)


def _write_json(path: Path, data: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(data, indent=2) + "\n")
        tmp.replace(path)
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror}") from None


def main() -> None:
    """Console-script entry point."""
    app()
