"""Inside the child: a trial that trains to a target loss (``--target-loss``).

Its windows are the target's cadence (:func:`plan`): ``cadence // global batch`` steps each, so
every check falls at a window's end, at the same samples for every batch size. After a window is
timed, :class:`TargetCheck` evaluates the loss over the fixed validation set (outside the timed
window) and says whether training goes on: it stops at the first check at or below the target,
or at the sample budget. When the first check already reaches the target, one more window is
trained, for timing only (it is the run's one steady window: it gives the throughput and tells
compilation from training); it does not count in the time to the target.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from tuner.core.errors import WorkloadError
from tuner.core.protocol import RunRequest
from tuner.core.target import (
    MIN_CHECKS,
    CheckPlan,
    budget_samples,
    compile_seconds,
    default_cadence,
    first_reached,
    plan_checks,
    training_seconds,
)


def plan(request: RunRequest, batch: int, n_train: int | None) -> CheckPlan | None:
    """The windows of a trial with a target (``None`` without one, or for fixed-step runs).

    A request without a cadence gets the grid's default from the budget this child can count
    (``epochs × n_train``), the same for every batch of ``cadence_batches``."""
    target, given = request.target, request.budget
    if target is None or given.steps_per_epoch:
        return None
    budget = budget_samples(given.train_samples, given.epochs, n_train)
    if budget is None:
        raise WorkloadError(
            "the training data have no known size, so a target's sample budget cannot be "
            "counted: give [search] train_samples (or --train-samples)"
        )
    cadence = target.eval_every_samples
    if cadence is None:
        cadence = default_cadence(list(target.cadence_batches) or [batch], budget)
    try:
        return plan_checks(cadence, batch, budget)
    except ValueError as exc:
        raise WorkloadError(f"{exc}: check --eval-every-samples and the budget") from None


class TargetCheck:
    """Called after each timed window: evaluates the validation loss, records it, and returns
    whether training goes on."""

    def __init__(self, checks: CheckPlan, target: float, evaluate: Callable[[], float]) -> None:
        self._checks = checks
        self._target = target
        self._evaluate = evaluate
        self.curve: list[list[float]] = []
        """``[samples, validation loss]`` at each check."""
        self.seconds = 0.0
        """Evaluation time, all checks together."""

    def __call__(self) -> bool:
        mark = time.perf_counter()
        loss = self._evaluate()
        self.seconds += time.perf_counter() - mark
        self.curve.append([self._checks.cadence * (len(self.curve) + 1), loss])
        if not math.isfinite(loss):
            return False  # diverged: the trial reports it from the final loss
        reached = self.reached_index
        return reached is None or len(self.curve) < max(MIN_CHECKS, reached + 1)

    @property
    def reached_index(self) -> int | None:
        """The index of the first check at or below the target, or ``None``."""
        return first_reached([loss for _, loss in self.curve], self._target)

    @property
    def final_loss(self) -> float:
        """The last check's loss: the trained model's final validation loss (not evaluated
        again)."""
        return self.curve[-1][1] if self.curve else math.nan

    def fields(self, window_seconds: list[float]) -> dict[str, Any]:
        """The result fields of time to target, from the windows' seconds."""
        reached = self.reached_index
        return {
            "target_loss": self._target,
            "eval_every_samples": self._checks.cadence,
            "reached_target": reached is not None,
            "samples_to_target": None if reached is None else int(self.curve[reached][0]),
            "time_to_target_s": None
            if reached is None
            else training_seconds(window_seconds, reached + 1),
            "target_curve": [[int(samples), loss] for samples, loss in self.curve],
            "compile_s": compile_seconds(window_seconds),
            "eval_s": self.seconds,
        }
