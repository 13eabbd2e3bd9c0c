"""The commands that run trials into a study: ``search`` (the grid) and ``probe`` (the largest
global batch that fits). Each parses its flags into its options object
(:mod:`tuner.driver.options`), makes one library call and prints what came back."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from tuner.cli.choices import ModelHyperparameters
from tuner.cli.errors import guard, sigterm_as_interrupt
from tuner.cli.logs import is_info_shown, say_info
from tuner.cli.options import (
    BackendOpt,
    BaseBatchOpt,
    BaseLrOpt,
    CpuReplicasOpt,
    EpochsOpt,
    GpusOpt,
    LineView,
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
    err,
    options_of,
    out,
    spec_default,
    write_json,
)
from tuner.core.probe import DEFAULT_PROBE_STEPS
from tuner.core.protocol import DEFAULT_TRIAL_TIMEOUT_S
from tuner.driver.options import ProbeOptions, SearchOptions
from tuner.storage import DEFAULT_HEARTBEAT_S, DEFAULT_STORAGE, DEFAULT_STORAGE_WAIT_S

if TYPE_CHECKING:
    from tuner.cli.progress import LogProgress, SearchProgress
    from tuner.core.devices import DevicePlan
    from tuner.core.outcome import TrialOutcome
    from tuner.core.plan import SearchPlan
    from tuner.core.protocol import EpochEvent, ProgressEvent
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
StorageWaitOpt = Annotated[
    float,
    typer.Option(
        help="Seconds to wait for a storage out of reach (server down or restarting, file "
        "locked), when the search starts or while it runs, before stopping; results measured "
        "meanwhile are spooled and recorded later."
    ),
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
EarlyStopOpt = Annotated[
    bool | None,
    typer.Option(
        "--early-stop/--no-early-stop",
        help="Stop a grid trial early when a sequential test over its validation-loss checks "
        "says it is worse than the best configuration beyond the tolerance and the seed noise "
        "(at most 5 % false stops), or under a target cannot beat the best time.",
        show_default=spec_default("early_stop"),
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
SearchTieMarginOpt = Annotated[
    float | None,
    typer.Option(
        "--tie-margin",
        help="Candidates whose throughput (goodput, time to target) is within this relative "
        "margin of the best are practically equal: the smallest global batch of them is "
        "picked. Beyond it the better measured value is, with how sure the runs are.",
        show_default=spec_default("tie_margin"),
    ),
]
LrSweepOpt = Annotated[
    int | None,
    typer.Option(
        "--lr-sweep",
        help="Train N learning rates at every global batch, log-spaced from half the none "
        "rule's rate to twice the linear rule's, and measure how the best rate scales with "
        "the batch (the law: alpha in lr* ~ B^alpha, the critical batch). 0: no sweep.",
        show_default="spec, else 0",
    ),
]
LrSweepFullOpt = Annotated[
    bool | None,
    typer.Option(
        "--lr-sweep-full",
        help="Train every rate of --lr-sweep. By default a sweep rate is skipped (bracketed) "
        "once a finished rate between it and the best rate at its batch is worse than the "
        "best: the final loss is assumed to have one minimum in log lr.",
        show_default="spec, else off",
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
BudgetOpt = Annotated[
    str | None,
    typer.Option(
        help="Time the search may take, e.g. 90s, 15m, 1h30m: a run that would not fit is not "
        "started (the grid before seeds and repeats, repeats most decisive first), and the end "
        "says what was left out and what it costs.",
        show_default="spec, else none",
    ),
]
QuickOpt = Annotated[
    bool,
    typer.Option(
        "--quick",
        help="A first answer: one run per configuration, one baseline run, no seed runs "
        "(--max-repeats 1 --seeds 1; an explicit --max-repeats or --seeds wins).",
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
    spec: SpecOpt = None,
    study: OldSpecOpt = None,
    gpus: GpusOpt = None,
    cpu_replicas: CpuReplicasOpt = None,
    storage: StorageOpt = DEFAULT_STORAGE,
    study_name: NewStudyNameOpt = None,
    base_batch_size: BaseBatchOpt = None,
    batch_multipliers: MultipliersOpt = None,
    lr_rules: RulesOpt = None,
    lr_sweep: LrSweepOpt = None,
    lr_sweep_full: LrSweepFullOpt = None,
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
    validate: ValidateFirstOpt = False,
    heartbeat: HeartbeatOpt = DEFAULT_HEARTBEAT_S,
    storage_wait: StorageWaitOpt = DEFAULT_STORAGE_WAIT_S,
    probe: ProbeOpt = False,
    baseline: BaselineOpt = True,
    model_hyperparameters: ModelHyperparametersOpt = None,
    trials: TrialsOpt = None,
    noise_scale: NoiseScaleOpt = None,
    seeds: SeedsOpt = None,
    max_repeats: MaxRepeatsOpt = None,
    tolerance: SearchToleranceOpt = None,
    tie_margin: SearchTieMarginOpt = None,
    target_loss: TargetLossOpt = None,
    eval_every_samples: EvalEveryOpt = None,
    early_stop: EarlyStopOpt = None,
    budget: BudgetOpt = None,
    quick: QuickOpt = False,
) -> None:
    """Run (or resume) a study: one short real training run per distinct grid point, then
    seeds and repeats where the decision is close."""
    flags = dict(locals())  # the parameters are named as SearchOptions' fields
    guard(lambda: _search(options_of(SearchOptions, flags)))


def _search(options: SearchOptions) -> None:
    """The library's search with live progress; on Ctrl-C or SIGTERM, print what was stored."""
    from tuner.cli import display
    from tuner.driver.search import search as run

    opened: list[Any] = []
    try:
        with SearchView() as view:
            report = run(options, view, on_study=opened.append)
    except KeyboardInterrupt:
        if opened:
            stopped = opened[0].get_trials(deepcopy=False)
            display.print_trials(out, stopped, f"Study {opened[0].study_name} (stopped)")
            err.print("what finished is stored; run the same command again to resume")
        raise
    _print_search(report, options.export, options.storage)


class SearchView(LineView):
    """A search drawn on stderr (a :class:`tuner.driver.search.SearchFront`): its notices and
    warnings, the ``--validate`` table, the banner, then the live progress of its trials (bars or
    lines, :mod:`tuner.cli.progress`), which start with the banner; SIGTERM is Ctrl-C from then
    on."""

    def __init__(self) -> None:
        self._stack = contextlib.ExitStack()
        self._progress: SearchProgress | LogProgress | None = None

    def __enter__(self) -> SearchView:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def warning(self, message: str) -> None:
        err.print(f"[yellow]{escape(message)}[/]")  # highlighted, unlike a notice

    def validated(self, report: dict[str, Any]) -> None:
        from tuner.cli import display

        if not report["passed"] or is_info_shown():  # -q: the table only when it failed
            display.print_validation(err, report)

    def starting(self, spec: StudySpec, plan: DevicePlan, study_name: str | None) -> None:
        from tuner.cli import display, progress

        say_info(display.search_banner(spec, plan, study_name))
        several = len(spec.search.precisions) > 1  # the progress lines then name each precision
        view = progress.search_progress(err, several)
        self._stack.enter_context(sigterm_as_interrupt())
        self._stack.enter_context(view)
        self._progress = view

    @property
    def _trials(self) -> SearchProgress | LogProgress:
        if self._progress is None:
            raise RuntimeError("a trial was reported before the search started")
        return self._progress

    def note(self, message: str) -> None:
        if self._progress is None:
            say_info(message)
        else:
            self._progress.note(message)

    def trial_started(self, number: int, position: int, total: int, params: dict[str, Any]) -> None:
        self._trials.trial_started(number, position, total, params)

    def epoch_finished(self, event: EpochEvent) -> None:
        self._trials.epoch_finished(event)

    def trial_progress(self, event: ProgressEvent) -> None:
        self._trials.trial_progress(event)

    def trial_finished(self, number: int, outcome: TrialOutcome) -> None:
        self._trials.trial_finished(number, outcome)

    def planned(self, plan: SearchPlan) -> None:
        self._trials.planned(plan)

    def phase(self, name: str, trainings: int) -> None:
        self._trials.phase(name, trainings)

    def training_started(self, label: str) -> None:
        self._trials.training_started(label)

    def training_finished(self) -> None:
        self._trials.training_finished()


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
        write_json(export, rec)
        say_info(f"recommended config written to {export}")


def probe_cmd(
    spec: SpecOpt = None,
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
    flags = dict(locals())  # the parameters are named as ProbeOptions' fields
    guard(lambda: _probe(options_of(ProbeOptions, flags)))


def _probe(options: ProbeOptions) -> None:
    """Probe with the steps said as they run; print the largest fitting batch."""
    from tuner.cli import display
    from tuner.driver.search import probe

    report = probe(options, LineView())
    display.say(out, display.probe_summary(report.found, report.plan.num_replicas))
