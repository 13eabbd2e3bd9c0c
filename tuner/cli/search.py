"""The commands that run trials into a study: ``search`` (the grid) and ``probe`` (the largest
global batch that fits)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tuner.cli.choices import ModelHyperparameters, value
from tuner.cli.errors import guard, sigterm_as_interrupt
from tuner.cli.logs import is_info_shown, say_info
from tuner.cli.options import (
    BackendOpt,
    BaseBatchOpt,
    BaseLrOpt,
    CpuReplicasOpt,
    EpochsOpt,
    GpusOpt,
    LoopOpt,
    MemoryLimitOpt,
    MultipliersOpt,
    NewStudyNameOpt,
    OldSpecOpt,
    PrecisionsOpt,
    ResolutionOpt,
    RulesOpt,
    SpecOpt,
    StorageOpt,
    TimeoutOpt,
    TrainSamplesOpt,
    UpdateOnOpt,
    ValSamplesOpt,
    budget_overrides,
    check_output,
    err,
    grid_overrides,
    out,
    overrides,
    spec_and_plan,
    spec_default,
    spec_path,
    write_json,
)
from tuner.core.errors import ConfigError, TunerError
from tuner.core.probe import DEFAULT_PROBE_STEPS
from tuner.core.protocol import DEFAULT_TRIAL_TIMEOUT_S
from tuner.storage import DEFAULT_HEARTBEAT_S, DEFAULT_STORAGE

if TYPE_CHECKING:
    from tuner.core.devices import DevicePlan
    from tuner.core.spec import StudySpec
    from tuner.driver.study import SearchReport

ExportOpt = Annotated[
    Path | None, typer.Option("--export", help="Write the recommended-config JSON here.")
]
ValidateFirstOpt = Annotated[
    bool, typer.Option("--validate", help="Run the validate checks first; stop on failure.")
]
HeartbeatOpt = Annotated[
    float, typer.Option(help="Seconds between worker heartbeats (RDB storages; 0: off).")
]
ProbeOpt = Annotated[bool, typer.Option("--probe", help="Probe the largest fitting batch first.")]
BaselineOpt = Annotated[
    bool,
    typer.Option(help="Record a single-device trial at the base batch (speedup, efficiency)."),
]
ModelHyperparametersOpt = Annotated[
    ModelHyperparameters | None,
    typer.Option(
        help="A KerasTuner hypermodel's hyperparameters: defaults (grid of batch × rule) or "
        "search (jointly with batch and rule, TPE, --trials budget).",
        show_default=spec_default("model_hyperparameters"),
    ),
]
TrialsOpt = Annotated[
    int | None,
    typer.Option(help="Trial budget of a joint search.", show_default=spec_default("trials")),
]
NoiseScaleOpt = Annotated[
    bool | None,
    typer.Option(
        "--noise-scale/--no-noise-scale",
        help="Measure the gradient noise scale (2+ replicas).",
        show_default=spec_default("noise_scale"),
    ),
]
ProbeStepsOpt = Annotated[int, typer.Option(help="Training steps per probed size.")]
SeedsOpt = Annotated[
    int | None,
    typer.Option(
        help="Runs of the base configuration with different seeds (weights and data order); "
        "the loss tolerance becomes max(--tolerance, 2 × their spread). 1 turns it off.",
        show_default=spec_default("seeds"),
    ),
]
MaxRepeatsOpt = Annotated[
    int | None,
    typer.Option(
        help="Most runs of a close candidate: racing re-runs candidates whose 95 % intervals "
        "overlap the best one's. 1 turns racing off.",
        show_default=spec_default("max_repeats"),
    ),
]
SearchToleranceOpt = Annotated[
    float | None,
    typer.Option(
        "--tolerance",
        help="Final-loss tolerance relative to the best trial (raised to 2 × the seed spread "
        "when that is larger).",
        show_default=spec_default("tolerance"),
    ),
]
TargetLossOpt = Annotated[
    float | None,
    typer.Option(
        help="Validation loss to train to: trials stop when they reach it and the default "
        "policy becomes time-to-target.",
        show_default="spec, else none",
    ),
]
EvalEveryOpt = Annotated[
    int | None,
    typer.Option(
        help="Samples between two checks of --target-loss (the same for every batch size).",
        show_default="spec, else about 10 checks per run",
    ),
]


def search(
    spec_file: SpecOpt = None,
    study: OldSpecOpt = None,
    gpus: GpusOpt = None,
    cpu_replicas: CpuReplicasOpt = None,
    storage: StorageOpt = DEFAULT_STORAGE,
    study_name: NewStudyNameOpt = None,
    base_batch_size: BaseBatchOpt = None,
    batch_multipliers: MultipliersOpt = None,
    lr_rules: RulesOpt = None,
    base_lr: BaseLrOpt = None,
    epochs: EpochsOpt = None,
    train_samples: TrainSamplesOpt = None,
    val_samples: ValSamplesOpt = None,
    memory_limit: MemoryLimitOpt = None,
    loop: LoopOpt = None,
    update_on: UpdateOnOpt = None,
    backend: BackendOpt = None,
    precisions: PrecisionsOpt = None,
    trial_timeout: TimeoutOpt = DEFAULT_TRIAL_TIMEOUT_S,
    export: ExportOpt = None,
    validate_first: ValidateFirstOpt = False,
    heartbeat: HeartbeatOpt = DEFAULT_HEARTBEAT_S,
    probe: ProbeOpt = False,
    baseline: BaselineOpt = True,
    model_hyperparameters: ModelHyperparametersOpt = None,
    trials: TrialsOpt = None,
    noise_scale: NoiseScaleOpt = None,
    seeds: SeedsOpt = None,
    max_repeats: MaxRepeatsOpt = None,
    tolerance: SearchToleranceOpt = None,
    target_loss: TargetLossOpt = None,
    eval_every_samples: EvalEveryOpt = None,
) -> None:
    """Run (or resume) a study: one short real training run per distinct grid point, then
    seeds and repeats where the decision is close."""

    def call() -> None:
        spec, plan = spec_and_plan(
            spec_path(spec_file, study),
            gpus,
            cpu_replicas,
            memory_limit,
            trial_timeout,
            overrides(base_batch_size, base_lr, epochs, loop, update_on, backend)
            | budget_overrides(train_samples, val_samples)
            | grid_overrides(batch_multipliers, lr_rules, precisions)
            | {
                "search.model_hyperparameters": value(model_hyperparameters),
                "search.trials": trials,
                "search.noise_scale": noise_scale,
                "search.seeds": seeds,
                "search.max_repeats": max_repeats,
                "search.tolerance": tolerance,
                "search.target_loss": target_loss,
                "search.eval_every_samples": eval_every_samples,
            },
        )
        _check_before_any_child(spec, plan, storage, study_name, export, heartbeat or None)
        _before_search(spec, plan, study_name, trial_timeout, validate_first)
        report = _run_search(
            spec,
            plan,
            storage,
            study_name=study_name,
            trial_timeout_s=trial_timeout,
            heartbeat_s=heartbeat or None,
            probe=probe,
            baseline=baseline,
        )
        _print_search(report, export, storage)

    guard(call)


def _check_before_any_child(
    spec: StudySpec,
    plan: DevicePlan,
    storage: str,
    study_name: str | None,
    export: Path | None,
    heartbeat_s: float | None = None,
) -> None:
    """Input errors that need no TensorFlow, reported before --validate or the workload check
    starts a child (and leaving the storage as it was)."""
    from tuner.driver.study import check_search_input

    if export is not None:
        check_output(export, "--export")
    check_search_input(spec, plan, storage, study_name=study_name, heartbeat_s=heartbeat_s)


def _before_search(
    spec: StudySpec,
    plan: DevicePlan,
    study_name: str | None,
    trial_timeout: float,
    validate_first: bool,
) -> None:
    """Warn about what will not be measured, validate when asked, and say what will run."""
    from tuner.cli import display

    if spec.search.noise_scale and plan.num_replicas < 2:
        err.print(
            "[yellow]the gradient noise scale needs at least 2 replicas: not measured on 1 "
            "(no critical batch or goodput either)[/]"
        )
    if validate_first:
        from tuner.driver.validate import run_validation

        say_info("validating the multi-replica training first…")
        checks = run_validation(spec, plan, timeout_s=trial_timeout)
        if not checks["passed"] or is_info_shown():  # -q: the table only when it failed
            display.print_validation(err, checks)
        if not checks["passed"]:
            raise TunerError("validation failed; the study was not started")
    say_info(display.search_banner(spec, plan, study_name))


def _run_search(spec: StudySpec, plan: DevicePlan, storage: str, **options: Any) -> SearchReport:
    """:func:`run_search` with live progress; on Ctrl-C or SIGTERM, print what was stored."""
    from tuner.cli import display
    from tuner.cli import progress as progress_view
    from tuner.driver.study import run_search

    opened: list[Any] = []
    several = len(spec.search.precisions) > 1  # the progress lines then name each precision
    try:
        with sigterm_as_interrupt(), progress_view.search_progress(err, several) as progress:
            return run_search(
                spec, plan, storage, observer=progress, on_study=opened.append, **options
            )
    except KeyboardInterrupt:
        if opened:
            stopped = opened[0].get_trials(deepcopy=False)
            display.print_trials(out, stopped, f"Study {opened[0].study_name} (stopped)")
            err.print("what finished is stored; run the same command again to resume")
        raise


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
    shown = unique_trials(report.study.get_trials(deepcopy=False))
    display.print_trials(out, shown, f"Study {report.study.study_name}")
    # Say why nothing completed (not "run tuner search first": this was that run); while other
    # workers still run grid points, the recommendation's own error says there is none yet.
    failure = None if report.running else nothing_completed(report.study.study_name, shown)
    if failure is not None:
        raise failure
    rec = recommendation(report.study, storage_url=storage)
    out.print(display.recommendation_table(rec))
    if export is not None:
        write_json(export, rec)
        say_info(f"recommended config written to {export}")


def probe_cmd(
    spec_file: SpecOpt = None,
    study: OldSpecOpt = None,
    gpus: GpusOpt = None,
    cpu_replicas: CpuReplicasOpt = None,
    memory_limit: MemoryLimitOpt = None,
    storage: StorageOpt = DEFAULT_STORAGE,
    study_name: NewStudyNameOpt = None,
    base_batch_size: BaseBatchOpt = None,
    batch_multipliers: MultipliersOpt = None,
    lr_rules: RulesOpt = None,
    base_lr: BaseLrOpt = None,
    epochs: EpochsOpt = None,
    train_samples: TrainSamplesOpt = None,
    val_samples: ValSamplesOpt = None,
    resolution: ResolutionOpt = None,
    steps: ProbeStepsOpt = DEFAULT_PROBE_STEPS,
    loop: LoopOpt = None,
    update_on: UpdateOnOpt = None,
    backend: BackendOpt = None,
    precisions: PrecisionsOpt = None,
) -> None:
    """Find the largest global batch that fits: doubling until out-of-memory, then bisection."""
    from tuner.cli import display
    from tuner.driver.study import probe_study

    def call() -> None:
        if steps < 1 or (resolution is not None and resolution < 1):
            raise ConfigError("--steps and --resolution must be positive")
        spec, plan = spec_and_plan(
            spec_path(spec_file, study),
            gpus,
            cpu_replicas,
            memory_limit,
            DEFAULT_TRIAL_TIMEOUT_S,
            overrides(base_batch_size, base_lr, epochs, loop, update_on, backend)
            | budget_overrides(train_samples, val_samples)
            | grid_overrides(batch_multipliers, lr_rules, precisions),
        )
        if len(spec.search.precisions) > 1:
            say_info(
                f"probing at {spec.search.precisions[0]}, the first precision: a probe runs one"
            )
        found = probe_study(
            spec,
            plan,
            storage,
            study_name=study_name,
            resolution=resolution,
            steps=steps,
            note=lambda message: say_info(f"  {message}"),
        )
        display.say(out, display.probe_summary(found, plan.num_replicas))

    guard(call)
