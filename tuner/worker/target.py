"""Inside the child: a trial that trains to a target loss (``--target-loss``).

Its windows are the target's cadence (:func:`plan`), so every check falls at the same samples for
every batch size. A first check that reaches the target is followed by one window for timing
only. With early stopping the check also stops a trial :mod:`tuner.core.dominance` dominates.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from tuner.core import dominance
from tuner.core.errors import WorkloadError
from tuner.core.protocol import EarlyStop, RunRequest
from tuner.core.target import (
    MIN_CHECKS,
    CheckPlan,
    budget_samples,
    default_cadence,
    first_reached,
    plan_checks,
    training_seconds,
)
from tuner.core.windows import warmup_excess


def plan(request: RunRequest, batch: int, n_train: int | None) -> CheckPlan | None:
    """The windows of a trial with a target (``None`` without); cadence default from the budget."""
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
        raise WorkloadError(f"{exc}: check [search] eval_every_samples and the budget") from None


class TargetCheck:
    """After each timed window: evaluate and record the loss; whether training goes on."""

    def __init__(
        self,
        checks: CheckPlan,
        target: float | None,
        evaluate: Callable[[], float],
        early_stop: EarlyStop | None = None,
        window_seconds: list[float] | None = None,
    ) -> None:
        self._checks = checks
        self._target = target
        self._evaluate = evaluate
        self._early_stop = early_stop
        self._window_seconds = window_seconds if window_seconds is not None else []
        self.curve: list[list[float]] = []
        """``[samples, validation loss]`` at each check."""
        self.seconds = 0.0
        """Evaluation time, all checks together."""
        self.dominance: dict[str, Any] | None = None
        """The evidence of the rule that stopped the trial as dominated, or ``None``."""

    def __call__(self) -> bool:
        mark = time.perf_counter()
        loss = self._evaluate()
        self.seconds += time.perf_counter() - mark
        self.curve.append([self._checks.cadence * (len(self.curve) + 1), loss])
        if not math.isfinite(loss):
            return False  # diverged: the trial reports it from the final loss
        reached = self.reached_index
        if reached is not None:
            return len(self.curve) < max(MIN_CHECKS, reached + 1)
        if self._early_stop is not None:
            self.dominance = self._judge(self._early_stop, loss)
        return self.dominance is None

    def _judge(self, stop: EarlyStop, loss: float) -> dict[str, Any] | None:
        """The evidence when a rule finds the trial dominated at this check, else ``None``."""
        index, checks = len(self.curve) - 1, self._checks.windows
        samples = int(self.curve[-1][0])
        if stop.best_time_s is not None and self._target is not None and index >= 1:
            seconds = self._window_seconds[: index + 1]
            elapsed = sum(seconds) - warmup_excess(seconds)
            window = elapsed / len(seconds)
            late, earliest = dominance.time_look(elapsed, window, stop.best_time_s, stop.tie_margin)
            if late:
                return {
                    "rule": dominance.TIME_TO_TARGET,
                    "samples": samples,
                    "loss": loss,
                    "target_loss": self._target,
                    "elapsed_s": elapsed,
                    "earliest_s": earliest,
                    "best_time_s": stop.best_time_s,
                    "margin": stop.tie_margin,
                    "reference_trial": stop.best_time_trial,
                }
        if stop.noise_sd is None or not stop.reference_samples:
            return None
        if not dominance.is_look(index, checks) or loss <= 0:
            return None
        reference = dominance.reference_at(stop.reference_samples, stop.reference_losses, samples)
        if reference is None or reference <= 0:
            return None
        early = dominance.reference_at(stop.noise_samples, stop.noise_sds, samples)
        test = dominance.GapTest(
            band=stop.band,
            noise_sd=max(stop.noise_sd, early or 0.0),
            noise_runs=stop.noise_runs,
            alpha=stop.alpha,
            looks=dominance.looks_of(checks),
        )
        verdict = dominance.gap_look(test, samples, loss, reference)
        if not verdict.dominated:
            return None
        return {**verdict.evidence, "reference_trial": stop.reference_trial}

    def _blind(self) -> str | None:
        """Why the loss-gap test could not look at this trial at all (``None`` when it could,
        or when it does not apply): it looks only between the first check and the last, so a
        trial of two windows — a spec of ``epochs = 2`` — is never judged, and says so."""
        stop, windows = self._early_stop, self._checks.windows
        if stop is None or self._target is not None or stop.noise_sd is None:
            return None
        if dominance.looks_of(windows) > 0:
            return None
        return (
            f"no early stop: {windows} validation checks (one per window), and the test looks "
            "only between the first and the last: train 3 windows or more (--epochs 3)"
        )

    @property
    def reached_index(self) -> int | None:
        """The index of the first check at or below the target, or ``None``."""
        if self._target is None:
            return None
        return first_reached([loss for _, loss in self.curve], self._target)

    @property
    def final_loss(self) -> float:
        """The last check's loss: the trained model's final validation loss."""
        return self.curve[-1][1] if self.curve else math.nan

    def fields(self, window_seconds: list[float]) -> dict[str, Any]:
        """The result fields of the checks: without a target the curve (``val_curve``), with one
        the time to target; the dominance evidence when a rule stopped the trial."""
        curve = [[int(samples), loss] for samples, loss in self.curve]
        extra: dict[str, Any] = {"eval_s": self.seconds}
        if self.dominance is not None:
            budget = self._checks.cadence * self._checks.windows
            extra["dominance"] = {
                **self.dominance,
                "budget_samples": budget,
                "samples_saved": budget - int(self.curve[-1][0]),
            }
        if blind := self._blind():
            extra["early_stop_skipped"] = blind
        if self._target is None:
            return {"val_curve": curve, **extra}
        reached = self.reached_index
        return {
            "target_loss": self._target,
            "eval_every_samples": self._checks.cadence,
            "reached_target": reached is not None,
            "samples_to_target": None if reached is None else int(self.curve[reached][0]),
            "time_to_target_s": None
            if reached is None
            else training_seconds(window_seconds, reached + 1),
            "target_curve": curve,
            "compile_s": warmup_excess(window_seconds),
            **extra,
        }
