"""``tuner validate``: prove that the multi-replica run trains like one device."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tuner.cli.choices import LossReduction, LrRule
from tuner.cli.errors import guard
from tuner.cli.logs import say_info
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
    OldSpecOpt,
    SpecOpt,
    TimeoutOpt,
    TrainSamplesOpt,
    UpdateOnOpt,
    ValSamplesOpt,
    options_of,
    out,
    write_json,
)
from tuner.core.errors import TunerError
from tuner.core.protocol import DEFAULT_TRIAL_TIMEOUT_S
from tuner.core.spec import LOSS_REDUCTIONS
from tuner.driver.options import ValidateOptions
from tuner.driver.validate.run import DEFAULT_RULE, DEFAULT_STEPS

BatchSizeOpt = Annotated[
    int | None, typer.Option(help="Global batch G of both runs (default: the base batch).")
]
LrRuleOpt = Annotated[
    LrRule, typer.Option("--lr-rule", "--lr-rules", help="Learning-rate rule at G.")
]
StepsOpt = Annotated[int, typer.Option(help="Training steps per run, over all epochs.")]
LossReductionOpt = Annotated[
    LossReduction,
    typer.Option(
        help="Custom loops, and fit under --backend jax: global (right), or replica-mean (the "
        "forum answer's bug, to see it caught)."
    ),
]
AccumulationOpt = Annotated[
    int | None,
    typer.Option(
        help="Instead: prove K accumulated micro-steps of --batch-size give the weights of one "
        "step at K × it (Keras's gradient_accumulation_steps).",
        min=2,
    ),
]
_DEFAULT_RULE = LrRule(DEFAULT_RULE)
_DEFAULT_REDUCTION = LossReduction(LOSS_REDUCTIONS[0])
ReportOutputOpt = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write the JSON report here.")
]


def validate(
    spec: SpecOpt = None,
    study: OldSpecOpt = None,
    gpus: GpusOpt = None,
    cpu_replicas: CpuReplicasOpt = None,
    memory_limit: MemoryLimitOpt = None,
    batch_size: BatchSizeOpt = None,
    base_batch_size: BaseBatchOpt = None,
    base_lr: BaseLrOpt = None,
    lr_rule: LrRuleOpt = _DEFAULT_RULE,
    epochs: EpochsOpt = None,
    train_samples: TrainSamplesOpt = None,
    val_samples: ValSamplesOpt = None,
    steps: StepsOpt = DEFAULT_STEPS,
    loop: LoopOpt = None,
    update_on: UpdateOnOpt = None,
    backend: BackendOpt = None,
    loss_reduction: LossReductionOpt = _DEFAULT_REDUCTION,
    accumulation: AccumulationOpt = None,
    output: ReportOutputOpt = None,
    trial_timeout: TimeoutOpt = DEFAULT_TRIAL_TIMEOUT_S,
) -> None:
    """Prove the multi-replica run is right: loss parity, final weights, weight sync, device use,
    learning rate."""
    flags = dict(locals())  # the parameters are named as ValidateOptions' fields
    guard(lambda: _validate(options_of(ValidateOptions, flags)))


def _validate(options: ValidateOptions) -> None:
    """Run both children; print the checks, write the report when asked; fail when one fails."""
    from tuner.cli import display
    from tuner.driver.search import validate as run

    report = run(options, LineView())
    display.print_validation(out, report)
    if options.output is not None:
        write_json(options.output, report)
        say_info(f"report written to {options.output}")
    if not report["passed"]:
        raise TunerError("validation failed: see the checks above")
