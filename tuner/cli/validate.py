"""``tuner validate``: prove that the multi-replica run trains like one device."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tuner.cli.errors import guard
from tuner.cli.options import (
    BaseBatchOpt,
    BaseLrOpt,
    CpuReplicasOpt,
    EpochsOpt,
    GpusOpt,
    LoopOpt,
    MemoryLimitOpt,
    SpecOpt,
    TimeoutOpt,
    TrainSamplesOpt,
    UpdateOnOpt,
    ValSamplesOpt,
    budget_overrides,
    check_output,
    err,
    out,
    overrides,
    spec_and_plan,
    write_json,
)
from tuner.core.errors import ConfigError, TunerError
from tuner.core.protocol import DEFAULT_TRIAL_TIMEOUT_S
from tuner.core.spec import LOSS_REDUCTIONS
from tuner.driver.validate import DEFAULT_RULE, DEFAULT_STEPS

BatchSizeOpt = Annotated[
    int | None, typer.Option(help="Global batch G of both runs (default: the base batch).")
]
LrRuleOpt = Annotated[str, typer.Option(help="Learning-rate rule at G: none, linear, sqrt.")]
StepsOpt = Annotated[int, typer.Option(help="Training steps per run, over all epochs.")]
LossReductionOpt = Annotated[
    str,
    typer.Option(
        help="Custom loops: global (right), or replica-mean (the forum answer's bug, to see "
        "it caught)."
    ),
]
ReportOutputOpt = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write the JSON report here.")
]


def validate(
    study: SpecOpt = None,
    gpus: GpusOpt = None,
    cpu_replicas: CpuReplicasOpt = None,
    memory_limit: MemoryLimitOpt = None,
    batch_size: BatchSizeOpt = None,
    base_batch_size: BaseBatchOpt = None,
    base_lr: BaseLrOpt = None,
    lr_rule: LrRuleOpt = DEFAULT_RULE,
    epochs: EpochsOpt = None,
    train_samples: TrainSamplesOpt = None,
    val_samples: ValSamplesOpt = None,
    steps: StepsOpt = DEFAULT_STEPS,
    loop: LoopOpt = None,
    update_on: UpdateOnOpt = None,
    loss_reduction: LossReductionOpt = LOSS_REDUCTIONS[0],
    output: ReportOutputOpt = None,
    trial_timeout: TimeoutOpt = DEFAULT_TRIAL_TIMEOUT_S,
) -> None:
    """Prove the multi-replica run is right: loss parity, weight sync, device use, learning rate."""
    from tuner.cli import display
    from tuner.driver.validate import run_validation

    def call() -> None:
        _check_flags(lr_rule, loss_reduction, steps, batch_size)
        if output is not None:
            check_output(output, "--output")
        spec, plan = spec_and_plan(
            study,
            gpus,
            cpu_replicas,
            memory_limit,
            trial_timeout,
            overrides(base_batch_size, base_lr, epochs, loop, update_on)
            | budget_overrides(train_samples, val_samples),
        )
        display.say(
            err,
            f"validating {spec.search.loop_kind} on {plan.num_replicas} {plan.kind} replicas "
            "against one device…",
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
        display.print_validation(out, report)
        if output is not None:
            write_json(output, report)
            display.say(err, f"report written to {output}")
        if not report["passed"]:
            raise TunerError("validation failed: see the checks above")

    guard(call)


def _check_flags(lr_rule: str, loss_reduction: str, steps: int, batch_size: int | None) -> None:
    """Raise :class:`ConfigError` for a flag value that validate cannot use."""
    from tuner.core.scaling import LR_RULES

    if lr_rule not in LR_RULES:
        raise ConfigError(f"--lr-rule must be one of {', '.join(LR_RULES)}, got {lr_rule!r}")
    if loss_reduction not in LOSS_REDUCTIONS:
        raise ConfigError(
            f"--loss-reduction must be {' or '.join(LOSS_REDUCTIONS)}, got {loss_reduction!r}"
        )
    if steps < 1 or (batch_size is not None and batch_size < 1):
        raise ConfigError("--steps and --batch-size must be positive")
