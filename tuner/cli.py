"""The ``tuner`` command line: each command parses, makes one library call, and prints.

Errors are mapped to one clean line and an exit code in one place (:func:`_exit_code`);
tracebacks only with ``--debug``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console

from tuner.errors import ConfigError, NoCompleteTrialError, TunerError
from tuner.storage import DEFAULT_STORAGE

if TYPE_CHECKING:
    from tuner.devices import DevicePlan
    from tuner.spec import StudySpec

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
SpecOpt = Annotated[
    Path | None, typer.Option("--study", help="Study spec (TOML); default: built-in regression.")
]
GpusOpt = Annotated[str | None, typer.Option(help="GPU indices, e.g. 0,1 (default: all).")]
CpuReplicasOpt = Annotated[
    int | None, typer.Option(help="Run on N logical CPU devices instead of GPUs.")
]
MemoryLimitOpt = Annotated[
    str | None, typer.Option(help="Memory cap per device, e.g. 512MiB or 14GiB.")
]
BaseBatchOpt = Annotated[int | None, typer.Option(help="Base global batch B.")]
BaseLrOpt = Annotated[float | None, typer.Option(help="Learning rate at batch B.")]
EpochsOpt = Annotated[int | None, typer.Option(help="Epochs per run (at least 2).")]
LoopOpt = Annotated[
    str | None, typer.Option(help="Training loop: fit (Keras fit) or custom (strategy.run).")
]
UpdateOnOpt = Annotated[
    str | None,
    typer.Option(help="Where the weights are updated: replicas, or cpu (needs --loop custom)."),
]
TimeoutOpt = Annotated[float, typer.Option(help="Seconds before a child run is killed.")]


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
    study: SpecOpt = None,
    gpus: GpusOpt = None,
    cpu_replicas: CpuReplicasOpt = None,
    storage: StorageOpt = DEFAULT_STORAGE,
    study_name: Annotated[
        str | None, typer.Option(help="Study name (default: the spec's name).")
    ] = None,
    base_batch_size: BaseBatchOpt = None,
    batch_multipliers: Annotated[
        str | None, typer.Option(help="Global batches as multiples of B, e.g. 1,2,4.")
    ] = None,
    lr_rules: Annotated[
        str | None, typer.Option(help="Learning-rate rules: none,linear,sqrt.")
    ] = None,
    base_lr: BaseLrOpt = None,
    epochs: EpochsOpt = None,
    memory_limit: MemoryLimitOpt = None,
    loop: LoopOpt = None,
    update_on: UpdateOnOpt = None,
    trial_timeout: TimeoutOpt = 1800.0,
    export: Annotated[
        Path | None, typer.Option("--export", help="Write the recommended-config JSON here.")
    ] = None,
    validate_first: Annotated[
        bool, typer.Option("--validate", help="Run the validate checks first; stop on failure.")
    ] = False,
) -> None:
    """Run (or resume) a study: one short real training run per grid point."""
    from tuner import _display
    from tuner.spec import parse_int_list, parse_name_list
    from tuner.study import recommendation, run_search

    def call() -> None:
        spec, plan = _spec_and_plan(
            study,
            gpus,
            cpu_replicas,
            memory_limit,
            trial_timeout,
            _overrides(base_batch_size, base_lr, epochs, loop, update_on)
            | {
                "search.batch_multipliers": batch_multipliers
                and parse_int_list(batch_multipliers, "--batch-multipliers"),
                "search.lr_rules": lr_rules and parse_name_list(lr_rules, "--lr-rules"),
            },
        )
        if validate_first:
            from tuner.validate import run_validation

            err.print("validating the multi-replica training first…")
            checks = run_validation(spec, plan, timeout_s=trial_timeout)
            _display.print_validation(err, checks)
            if not checks["passed"]:
                raise TunerError("validation failed; the study was not started")
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


@app.command()
def validate(
    study: SpecOpt = None,
    gpus: GpusOpt = None,
    cpu_replicas: CpuReplicasOpt = None,
    memory_limit: MemoryLimitOpt = None,
    batch_size: Annotated[
        int | None, typer.Option(help="Global batch G of both runs (default: the base batch).")
    ] = None,
    base_batch_size: BaseBatchOpt = None,
    base_lr: BaseLrOpt = None,
    lr_rule: Annotated[
        str, typer.Option(help="Learning-rate rule at G: none, linear, sqrt.")
    ] = "none",
    epochs: EpochsOpt = None,
    steps: Annotated[int, typer.Option(help="Training steps per run, over all epochs.")] = 50,
    loop: LoopOpt = None,
    update_on: UpdateOnOpt = None,
    loss_reduction: Annotated[
        str,
        typer.Option(
            help="Custom loops: global (right), or replica-mean (the forum answer's bug, to see "
            "it caught)."
        ),
    ] = "global",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the JSON report here.")
    ] = None,
    trial_timeout: TimeoutOpt = 1800.0,
) -> None:
    """Prove the multi-replica run is right: loss parity, weight sync, device use, learning rate."""
    from tuner import _display
    from tuner.scaling import LR_RULES
    from tuner.validate import run_validation

    def call() -> None:
        if lr_rule not in LR_RULES:
            raise ConfigError(f"--lr-rule must be one of {', '.join(LR_RULES)}, got {lr_rule!r}")
        if loss_reduction not in ("global", "replica-mean"):
            raise ConfigError(
                f"--loss-reduction must be global or replica-mean, got {loss_reduction!r}"
            )
        if steps < 1 or (batch_size is not None and batch_size < 1):
            raise ConfigError("--steps and --batch-size must be positive")
        spec, plan = _spec_and_plan(
            study,
            gpus,
            cpu_replicas,
            memory_limit,
            trial_timeout,
            _overrides(base_batch_size, base_lr, epochs, loop, update_on),
        )
        err.print(
            f"validating {spec.search.loop_kind} on {plan.num_replicas} {plan.kind} replicas "
            "against one device…"
        )
        report = run_validation(
            spec,
            plan,
            loss_reduction=loss_reduction,
            global_batch=batch_size,
            lr_rule=lr_rule,
            steps=steps,
            timeout_s=trial_timeout,
        )
        _display.print_validation(out, report)
        if output is not None:
            _write_json(output, report)
            err.print(f"report written to {output}")
        if not report["passed"]:
            raise TunerError("validation failed: see the checks above")

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


def _overrides(
    base_batch_size: int | None,
    base_lr: float | None,
    epochs: int | None,
    loop: str | None,
    update_on: str | None,
) -> dict[str, Any]:
    """The spec overrides that search and validate share (``None``: keep the spec's value)."""
    return {
        "search.base_batch_size": base_batch_size,
        "search.base_lr": base_lr,
        "search.epochs": epochs,
        "search.loop": loop,
        "search.update_on": update_on,
    }


def _spec_and_plan(
    study: Path | None,
    gpus: str | None,
    cpu_replicas: int | None,
    memory_limit: str | None,
    timeout: float,
    overrides: dict[str, Any],
) -> tuple[StudySpec, DevicePlan]:
    """Load and check the spec and the devices (shared by search and validate)."""
    from tuner.devices import plan_devices
    from tuner.spec import load_spec

    if timeout <= 0:
        raise ConfigError(f"--trial-timeout must be positive, got {timeout}")
    spec = load_spec(study, overrides)
    plan, notice = plan_devices(gpus, cpu_replicas, memory_limit)
    if notice:
        err.print(f"[yellow]{notice}[/]")
    return spec, plan


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
