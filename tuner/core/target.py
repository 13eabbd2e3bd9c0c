"""Time to a target loss: when a trial checks its validation loss, and what the checks mean.

A trial checks every ``cadence`` samples, a multiple of every global batch of the grid, so that
all batches are compared at the same sample counts; it stops at the first check at or below the
target. The time to it is training time only, less the first window's compilation
(:func:`tuner.core.windows.warmup_excess`); evaluation runs between windows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from tuner.core.errors import ConfigError
from tuner.core.options import named
from tuner.core.windows import warmup_excess

TARGET_CHECKS = 10
"""About this many checks over the sample budget when the user gives no cadence."""
MIN_CHECKS = 2
"""A trial with a target trains at least two windows: the first holds compilation, and only a
second, steady one can tell compilation from training."""


def cadence_unit(batch_sizes: Sequence[int]) -> int:
    """The smallest sample count every global batch of ``batch_sizes`` divides (their lcm)."""
    return math.lcm(*batch_sizes) if batch_sizes else 1


def budget_samples(
    train_samples: int | None, epochs: int | None, n_train: int | None
) -> int | None:
    """A trial's most samples: ``train_samples``, else ``epochs × n_train``, else ``None``."""
    if train_samples is not None:
        return train_samples
    if epochs is not None and n_train is not None:
        return epochs * n_train
    return None


def default_cadence(batch_sizes: Sequence[int], budget: int) -> int:
    """The default cadence: the multiple of :func:`cadence_unit` nearest ``budget / 10`` (at least
    one); ``ConfigError`` when the budget holds fewer than :data:`MIN_CHECKS` units."""
    unit = cadence_unit(batch_sizes)
    if budget < MIN_CHECKS * unit:
        raise ConfigError(
            f"a sample budget of {budget} holds fewer than {MIN_CHECKS} checks of the target: "
            f"checks fall every multiple of {unit} samples (the least common multiple of the "
            f"grid's global batches {', '.join(map(str, sorted(batch_sizes)))}); raise the budget "
            "or shrink the grid"
        )
    return max(1, round(budget / TARGET_CHECKS / unit)) * unit


def check_cadence(
    cadence: int, batch_sizes: Sequence[int], budget: int | None = None, label: str | None = None
) -> None:
    """Refuse, in one ``ConfigError`` line naming the field by ``label`` (default: as the front
    end does), a cadence some global batch does not divide (never rounded silently) or that
    leaves fewer than :data:`MIN_CHECKS` checks in ``budget``."""
    label = label or named("eval_every_samples")
    for batch in sorted(batch_sizes):
        if cadence % batch:
            raise ConfigError(
                f"{label} {cadence} is not a multiple of global batch {batch}: every "
                f"batch size must check the loss at the same samples; use a multiple of "
                f"{cadence_unit(batch_sizes)} (the least common multiple of the grid's batches)"
            )
    if budget is not None and budget // cadence < MIN_CHECKS:
        raise ConfigError(
            f"{label} {cadence} leaves fewer than {MIN_CHECKS} checks in the sample "
            f"budget of {budget}: give at most {budget // MIN_CHECKS}"
        )


@dataclass(frozen=True)
class CheckPlan:
    """``windows`` windows of ``window_steps`` steps, a check at the end of each."""

    cadence: int
    window_steps: int
    windows: int


def plan_checks(cadence: int, global_batch: int, budget: int) -> CheckPlan:
    """A trial's check windows; ``ValueError`` where :func:`check_cadence` would refuse."""
    if cadence % global_batch:
        raise ValueError(f"a check every {cadence} samples is not a multiple of {global_batch}")
    windows = budget // cadence
    if windows < MIN_CHECKS:
        raise ValueError(
            f"a check every {cadence} samples leaves {windows} checks in {budget} samples; "
            f"a trial with a target needs at least {MIN_CHECKS}"
        )
    return CheckPlan(cadence, cadence // global_batch, windows)


def first_reached(losses: Sequence[float], target: float) -> int | None:
    """The index of the first check whose loss is at or below ``target`` (``None``: never)."""
    return next(
        (i for i, loss in enumerate(losses) if math.isfinite(loss) and loss <= target), None
    )


def training_seconds(window_seconds: Sequence[float], windows: int) -> float:
    """Training seconds of the first ``windows`` windows, compilation excluded."""
    return sum(window_seconds[:windows]) - warmup_excess(window_seconds)
