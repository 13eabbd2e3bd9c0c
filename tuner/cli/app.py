"""The ``tuner`` command line: each command parses, makes one library call, and prints.

Errors are mapped to one clean line and an exit code in one place (:mod:`tuner.cli.errors`);
tracebacks only with ``--debug``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer

from tuner.cli.browse import register_browse_commands
from tuner.cli.errors import guard, sigterm_as_interrupt, state
from tuner.cli.options import (
    BaseBatchOpt,
    BaseLrOpt,
    CpuReplicasOpt,
    EpochsOpt,
    GpusOpt,
    LoopOpt,
    MemoryLimitOpt,
    MultipliersOpt,
    ResolutionOpt,
    RulesOpt,
    SpecOpt,
    StorageOpt,
    TimeoutOpt,
    UpdateOnOpt,
    err,
    grid_overrides,
    out,
    overrides,
    spec_and_plan,
    write_json,
)
from tuner.core.errors import ConfigError, TunerError
from tuner.core.protocol import DEFAULT_TRIAL_TIMEOUT_S
from tuner.storage import DEFAULT_STORAGE

app = typer.Typer(
    name="tuner",
    help="Measure which global batch size and learning-rate rule to use with MirroredStrategy.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _main(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
) -> None:
    state["debug"] = debug


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
    batch_multipliers: MultipliersOpt = None,
    lr_rules: RulesOpt = None,
    base_lr: BaseLrOpt = None,
    epochs: EpochsOpt = None,
    memory_limit: MemoryLimitOpt = None,
    loop: LoopOpt = None,
    update_on: UpdateOnOpt = None,
    trial_timeout: TimeoutOpt = DEFAULT_TRIAL_TIMEOUT_S,
    export: Annotated[
        Path | None, typer.Option("--export", help="Write the recommended-config JSON here.")
    ] = None,
    validate_first: Annotated[
        bool, typer.Option("--validate", help="Run the validate checks first; stop on failure.")
    ] = False,
    heartbeat: Annotated[
        float,
        typer.Option(help="Seconds between worker heartbeats (RDB storages; 0: off)."),
    ] = 20.0,
    probe: Annotated[
        bool, typer.Option("--probe", help="Probe the largest fitting batch first.")
    ] = False,
    baseline: Annotated[
        bool,
        typer.Option(help="Record a single-device trial at the base batch (speedup, efficiency)."),
    ] = True,
    model_hyperparameters: Annotated[
        str | None,
        typer.Option(
            help="A KerasTuner hypermodel's hyperparameters: defaults (grid of batch × rule) or "
            "search (jointly with batch and rule, TPE, --trials budget)."
        ),
    ] = None,
    trials: Annotated[
        int | None, typer.Option(help="Trial budget of a joint search (default 20).")
    ] = None,
    noise_scale: Annotated[
        bool | None,
        typer.Option(
            "--noise-scale/--no-noise-scale",
            help="Measure the gradient noise scale (2+ replicas; default: on).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Run (or resume) a study: one short real training run per grid point."""
    from tuner.cli import display as _display
    from tuner.core.recommend import unique_trials
    from tuner.driver.study import run_search
    from tuner.results import recommendation

    def call() -> None:
        spec, plan = spec_and_plan(
            study,
            gpus,
            cpu_replicas,
            memory_limit,
            trial_timeout,
            overrides(base_batch_size, base_lr, epochs, loop, update_on)
            | grid_overrides(batch_multipliers, lr_rules)
            | {
                "search.model_hyperparameters": model_hyperparameters,
                "search.trials": trials,
                "search.noise_scale": noise_scale,
            },
        )
        if spec.search.noise_scale and plan.num_replicas < 2:
            err.print(
                "[yellow]the gradient noise scale needs at least 2 replicas: not measured on 1 "
                "(no critical batch or goodput either)[/]"
            )
        if validate_first:
            from tuner.driver.validate import run_validation

            err.print("validating the multi-replica training first…")
            checks = run_validation(spec, plan, timeout_s=trial_timeout)
            _display.print_validation(err, checks)
            if not checks["passed"]:
                raise TunerError("validation failed; the study was not started")
        shape = (
            f"{spec.search.trials} trials of model hyperparameters × " if spec.search.joint else ""
        ) + f"{len(spec.search.global_batch_sizes)} batch sizes × {len(spec.search.lr_rules)} rules"
        err.print(
            f"study {study_name or spec.name!r}: {shape} on {plan.num_replicas} {plan.kind} "
            "replicas; checking the workload…"
        )
        if not math.isfinite(heartbeat) or heartbeat < 0:
            raise ConfigError(f"--heartbeat must be 0 (off) or a positive number, got {heartbeat}")
        opened: list[Any] = []
        try:
            with sigterm_as_interrupt(), _display.SearchProgress(err) as progress:
                report = run_search(
                    spec,
                    plan,
                    storage,
                    study_name=study_name,
                    trial_timeout_s=trial_timeout,
                    heartbeat_s=heartbeat or None,
                    probe=probe,
                    baseline=baseline,
                    observer=progress,
                    on_study=opened.append,
                )
        except KeyboardInterrupt:
            if opened:
                stopped = opened[0].get_trials(deepcopy=False)
                out.print(_display.trials_table(stopped, f"Study {opened[0].study_name} (stopped)"))
                err.print("what finished is stored; run the same command again to resume")
            raise
        if report.running:
            err.print(
                f"{report.running} grid point(s) still marked RUNNING: another worker is on them, "
                "or one that died and is not yet stale (run again after the heartbeat grace "
                "period to recover them)"
            )
        elif report.launched == 0:
            err.print(f"all {report.grid_size} grid points are already finished; nothing to run")
        shown = unique_trials(report.study.get_trials(deepcopy=False))
        out.print(_display.trials_table(shown, f"Study {report.study.study_name}"))
        rec = recommendation(report.study)
        out.print(_display.recommendation_table(rec))
        if export is not None:
            write_json(export, rec)
            err.print(f"recommended config written to {export}")

    guard(call)


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
    trial_timeout: TimeoutOpt = DEFAULT_TRIAL_TIMEOUT_S,
) -> None:
    """Prove the multi-replica run is right: loss parity, weight sync, device use, learning rate."""
    from tuner.cli import display as _display
    from tuner.core.scaling import LR_RULES
    from tuner.driver.validate import run_validation

    def call() -> None:
        if lr_rule not in LR_RULES:
            raise ConfigError(f"--lr-rule must be one of {', '.join(LR_RULES)}, got {lr_rule!r}")
        if loss_reduction not in ("global", "replica-mean"):
            raise ConfigError(
                f"--loss-reduction must be global or replica-mean, got {loss_reduction!r}"
            )
        if steps < 1 or (batch_size is not None and batch_size < 1):
            raise ConfigError("--steps and --batch-size must be positive")
        spec, plan = spec_and_plan(
            study,
            gpus,
            cpu_replicas,
            memory_limit,
            trial_timeout,
            overrides(base_batch_size, base_lr, epochs, loop, update_on),
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
            write_json(output, report)
            err.print(f"report written to {output}")
        if not report["passed"]:
            raise TunerError("validation failed: see the checks above")

    guard(call)


@app.command("probe")
def probe_cmd(
    study: SpecOpt = None,
    gpus: GpusOpt = None,
    cpu_replicas: CpuReplicasOpt = None,
    memory_limit: MemoryLimitOpt = None,
    storage: StorageOpt = DEFAULT_STORAGE,
    study_name: Annotated[
        str | None, typer.Option(help="Study name (default: the spec's name).")
    ] = None,
    base_batch_size: BaseBatchOpt = None,
    batch_multipliers: MultipliersOpt = None,
    lr_rules: RulesOpt = None,
    base_lr: BaseLrOpt = None,
    epochs: EpochsOpt = None,
    resolution: ResolutionOpt = None,
    steps: Annotated[int, typer.Option(help="Training steps per probe run.")] = 5,
    loop: LoopOpt = None,
    update_on: UpdateOnOpt = None,
) -> None:
    """Find the largest global batch that fits: doubling until out-of-memory, then bisection."""
    from tuner.driver.study import probe_study

    def call() -> None:
        if steps < 1 or (resolution is not None and resolution < 1):
            raise ConfigError("--steps and --resolution must be positive")
        spec, plan = spec_and_plan(
            study,
            gpus,
            cpu_replicas,
            memory_limit,
            DEFAULT_TRIAL_TIMEOUT_S,
            overrides(base_batch_size, base_lr, epochs, loop, update_on)
            | grid_overrides(batch_multipliers, lr_rules),
        )
        found = probe_study(
            spec,
            plan,
            storage,
            study_name=study_name,
            resolution=resolution,
            steps=steps,
            note=lambda message: err.print(f"  {message}"),
        )
        largest, oom = found["largest_fitting_batch"], found["smallest_oom_batch"]
        out.print(
            f"largest global batch that fits on {found['device_signature']}: {largest} "
            f"({largest // plan.num_replicas if largest else 0} per replica); "
            + (f"out of memory at {oom}" if oom else "no out-of-memory up to the training set")
            + f" — {found['launches']} launches in {found['wall_s']:.0f} s"
        )

    guard(call)


register_browse_commands(app)


def main() -> None:
    """Console-script entry point."""
    app()
