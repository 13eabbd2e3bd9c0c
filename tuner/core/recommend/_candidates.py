"""The candidates of a recommendation and the policy's pick among them.

``loss-then-throughput`` and ``goodput`` keep the representatives whose final loss is within the
loss tolerance of the best: ``max(--tolerance, 2 × the seed-to-seed spread)``, as a difference
smaller than the seed noise is none (:func:`tuner.core.stats.effective_tolerance`);
``time-to-target`` keeps those that reached the target. A ``same_as`` trial is never a candidate
(its original is). The pick is :func:`tuner.core.recommend._ties.decide`'s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from optuna.trial import FrozenTrial

from tuner.core.configurations import (
    is_complete,
    is_same_as,
    model_config,
    precision_of,
    runs_of,
    steps_of,
    throughput_ci,
    time_to_target_ci,
    unique_trials,
)
from tuner.core.errors import ConfigError, NoCompleteTrialError
from tuner.core.racing import Entry
from tuner.core.recommend import DEFAULT_TIE_MARGIN, GOODPUT, POLICIES, TIME_TO_TARGET
from tuner.core.recommend._ties import Pick, decide
from tuner.core.record import decode
from tuner.core.stats import Interval, effective_tolerance, relative_spread


@dataclass(frozen=True)
class Tolerance:
    """The loss tolerance applied, where it came from, and the seed noise it was weighed with."""

    applied: float
    source: str
    """``--tolerance`` or ``seed noise``."""
    seed_spread: float | None
    seed_final_losses: list[float] | None


def loss_tolerance(tolerance: float, seed_record: dict[str, Any] | None) -> Tolerance:
    """The tolerance given ``--tolerance`` and a signature's ``seed_noise`` record (or ``None``)."""
    record = seed_record or {}
    losses = [float(x) for x in record.get("final_losses") or [] if isinstance(x, int | float)]
    spread = record.get("spread")
    if not isinstance(spread, int | float) or not math.isfinite(spread):
        spread = relative_spread(losses)
    applied, source = effective_tolerance(tolerance, spread)
    return Tolerance(applied, source, spread, losses or None)


def higher_is_better(policy: str) -> bool:
    """Whether the policy's value is better when higher (throughput, goodput) or lower (time)."""
    return policy != TIME_TO_TARGET


def policy_candidates(
    trials: Sequence[FrozenTrial],
    policy: str,
    tolerance: float,
    *,
    study_name: str,
    target_loss: float | None = None,
) -> list[FrozenTrial]:
    """The representatives among ``trials`` (one device signature) the policy may pick.
    Raises :class:`NoCompleteTrialError` when there is none, :class:`ConfigError` for an
    unknown policy or ``time-to-target`` without a target."""
    if policy not in POLICIES:
        raise ConfigError(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}")
    complete = [t for t in unique_trials(trials) if is_complete(t) and not is_same_as(t)]
    if policy == TIME_TO_TARGET:
        return _reached(complete, study_name, target_loss)
    kept = within_tolerance(complete, tolerance)
    if policy == GOODPUT:
        kept = [t for t in kept if decode(t).result.goodput is not None]
        if not kept:
            raise NoCompleteTrialError(
                f"study {study_name!r} has no trial with a measured gradient noise scale "
                "(it needs 2+ replicas and noise_scale = true), so no goodput; use the default "
                "policy"
            )
    return kept


def within_tolerance(complete: Sequence[FrozenTrial], tolerance: float) -> list[FrozenTrial]:
    """The trials whose final loss is within ``tolerance`` (relative) of the best one."""
    if not complete:
        return []
    best_loss = min(t.values[0] for t in complete)
    threshold = best_loss + tolerance * abs(best_loss)
    return [t for t in complete if t.values[0] <= threshold]


def _reached(
    complete: list[FrozenTrial], study_name: str, target_loss: float | None
) -> list[FrozenTrial]:
    if target_loss is None:
        raise ConfigError(
            f"policy {TIME_TO_TARGET} needs a target loss, and study {study_name!r} was searched "
            "without one; search with --target-loss, or choose --policy loss-then-throughput"
        )
    reached = [
        t
        for t in complete
        if decode(t).decision.reached_target is True
        and _finite(decode(t).decision.time_to_target_s)
    ]
    if reached:
        return reached
    best = _best_loss_seen(complete)
    seen = "no trial completed" if best is None else f"best validation loss seen: {best:.6g}"
    raise NoCompleteTrialError(
        f"no trial of study {study_name!r} reached the target loss {target_loss:g} ({seen}); "
        "set a higher --target-loss, train longer (more epochs or train_samples), or choose "
        "--policy loss-then-throughput"
    )


def _best_loss_seen(complete: list[FrozenTrial]) -> float | None:
    """The lowest validation loss any trial reported: at a check or at the end."""
    losses = [t.values[0] for t in complete]
    for trial in complete:
        curve = decode(trial).decision.target_curve or []
        losses += [float(p[1]) for p in curve if len(p) == 2 and _finite(p[1])]
    return min(losses) if losses else None


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


def policy_entry(trial: FrozenTrial, policy: str) -> Entry:
    """What the policy compares for one candidate: its value, interval, runs and batch."""
    attrs = decode(trial).flat
    interval: Interval | None
    if policy == TIME_TO_TARGET:
        value, interval = float(attrs["time_to_target_s"]), time_to_target_ci(attrs)
    else:
        value = throughput = float(trial.values[1])
        interval = throughput_ci(attrs)
        if policy == GOODPUT:
            # Statistical efficiency is a smooth function of the noise scale: the goodput's
            # interval is the throughput's, scaled by it.
            value = float(attrs["goodput"])
            if interval is not None and throughput > 0:
                scale = value / throughput
                method = f"{interval.method}, × statistical efficiency"
                interval = Interval(interval.low * scale, interval.high * scale, method)
    batch = int(trial.params["global_batch_size"])
    computation: tuple[object, ...] = ()  # a time to target depends on the rate: no computation
    if policy != TIME_TO_TARGET:
        computation = (batch, precision_of(trial), steps_of(trial), model_config(trial))
    loss = float(trial.values[0])
    return Entry(trial.number, value, interval, runs_of(trial), batch, loss, computation)


def candidate_entries(
    trials: Sequence[FrozenTrial],
    policy: str,
    tolerance: float,
    *,
    study_name: str = "",
    target_loss: float | None = None,
) -> list[Entry]:
    """Racing's input: the candidates' entries as :func:`choose` weighs them."""
    found = policy_candidates(
        trials, policy, tolerance, study_name=study_name, target_loss=target_loss
    )
    return [policy_entry(t, policy) for t in found]


def choose(
    candidates: Sequence[FrozenTrial], policy: str, margin: float = DEFAULT_TIE_MARGIN
) -> tuple[FrozenTrial, Pick]:
    """The policy's pick among ``candidates``, and the decision. A value without an interval
    (one run of one window, or stored before intervals were) counts as exact, as such a study
    was always decided; racing (:func:`candidate_entries`) gives it another run instead."""
    entries = [policy_entry(t, policy) for t in candidates]
    decision = decide(entries, higher_is_better=higher_is_better(policy), margin=margin)
    chosen = next(t for t in candidates if t.number == decision.chosen)
    return chosen, decision
