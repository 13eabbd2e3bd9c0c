"""What a grid trial is compared with to stop early as ``dominated`` (:mod:`tuner.core.dominance`;
the method: ``docs/design/measurement.md``, "Stopping dominated trials early").

The request carries what is known at launch: the seed noise on these devices, the best finished
trial's loss curve, and under a target the best time to it. What is not known is not guessed:
the trial runs to the end and stores why in ``early_stop_skipped``. Repeats are never stopped.
Under a loss target the reference's curve is moved to equal *training time*, in the trial's
favour; without a throughput at the trial's batch yet, only a reference of the same batch is
compared.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from optuna.trial import FrozenTrial

from tuner.core import dominance
from tuner.core.configurations import is_same_as
from tuner.core.dominance import DEFAULT_ALPHA, check_noise
from tuner.core.protocol import EarlyStop
from tuner.core.record import decode
from tuner.core.spec import StudySpec
from tuner.core.stats import effective_tolerance
from tuner.driver.decide.racing import is_original

CURVES = ("val_curve", "target_curve")
"""The trial attributes that hold ``[samples, validation loss]`` at each check."""


def records_curves(spec: StudySpec) -> bool:
    """Whether the grid trials evaluate their loss after each window: early stopping is on and
    some rule can apply in this study (a loss target's checks exist anyway; without one, the
    seed noise must be measured: ``seeds`` ≥ 2 and no joint search)."""
    search = spec.search
    if not search.decision.early_stop:
        return False
    return search.run.target_loss is not None or dominance.measures_seed_noise(search)


def early_stop_for(
    spec: StudySpec,
    signature: str,
    seed_records: Callable[[], Mapping[str, Any] | None],
    trials: Sequence[FrozenTrial],
    batch: int | None = None,
) -> tuple[EarlyStop | None, str | None]:
    """The request's :class:`EarlyStop` for a grid trial at ``batch`` on ``signature``'s devices,
    and the reason no rule can stop it (``early_stop_skipped``)."""
    decision = spec.search.decision
    if not decision.early_stop:
        return None, None
    if not records_curves(spec):
        why = "seeds = 1" if decision.seeds < 2 else "a joint search measures no seed noise"
        return None, f"no early stop: the seed noise is not measured ({why})"
    mine = [t for t in trials if decode(t).configuration.device_signature == signature]
    fields: dict[str, Any] = {"alpha": DEFAULT_ALPHA, "tie_margin": decision.tie_margin}
    reasons: list[str] = []
    rivals = peers(spec, mine, batch)
    if spec.search.run.target_loss is not None:
        fields.update(_best_time(rivals, reasons))
        if dominance.measures_seed_noise(spec.search):
            record = (seed_records() or {}).get(signature)
            gap: list[str] = []
            margins = (decision.tolerance, decision.tie_margin)
            fields.update(_target_gap(*margins, record, (mine, rivals), batch, gap))
            if "best_time_s" not in fields:  # else the time rule applies: the gap's is no news
                reasons.extend(r for r in gap if r not in reasons)
    else:
        record = (seed_records() or {}).get(signature)
        fields.update(_loss_gap(decision.tolerance, record, mine, reasons, rivals))
    stop = EarlyStop(**fields)
    applies = stop.best_time_s is not None or stop.reference_trial is not None
    return stop, None if applies else "no early stop: " + "; ".join(reasons)


def _loss_gap(
    tolerance: float,
    record: Mapping[str, Any] | None,
    trials: Sequence[FrozenTrial],
    reasons: list[str],
    rivals: Sequence[FrozenTrial] | None = None,
) -> dict[str, Any]:
    """The loss-gap test's inputs against the best of ``rivals``, or none (why in ``reasons``)."""
    spread = (record or {}).get("spread")
    runs = len((record or {}).get("final_losses") or [])
    if not isinstance(spread, int | float) or not math.isfinite(spread) or runs < 2:
        reasons.append("the seed noise is not measured yet")
        return {}
    if spread <= 0:
        reasons.append("the seeds' final losses are identical (no noise to test against)")
        return {}
    reference = best_reference(trials if rivals is None else rivals)
    if reference is None:
        reasons.append("no finished trial with a loss curve to compare with yet")
        return {}
    noise = check_noise(_seed_curves(record or {}, trials))
    return _test_inputs(tolerance, float(spread), runs, noise, reference)


def _target_gap(
    tolerance: float,
    margin: float,
    record: Mapping[str, Any] | None,
    trials_and_rivals: tuple[Sequence[FrozenTrial], Sequence[FrozenTrial]],
    batch: int | None,
    reasons: list[str],
) -> dict[str, Any]:
    """Under a target, the loss-gap test's inputs at equal training time, or none (why)."""
    trials, rivals = trials_and_rivals
    curves = _seed_curves(record or {}, trials)
    noise_samples, noise_sds = check_noise(curves)
    if not noise_sds:
        reasons.append("the seed noise is not measured yet")
        return {}
    if noise_sds[-1] <= 0:
        reasons.append("the seeds' losses are identical (no noise to test against)")
        return {}
    reference = _fastest([t for t in _reached(rivals) if _usable(curve_of(t))])
    if reference is None or batch is None:
        reasons.append("no trial has reached the target yet")
        return {}
    scale = _time_scale(trials, reference, batch, margin)
    if scale is None:
        reasons.append(f"no throughput measured at batch {batch} yet (no time to compare at)")
        return {}
    spread = noise_sds[-1]  # at the seeds' last shared check, the closest to the target
    noise = (noise_samples, noise_sds)
    return _test_inputs(tolerance, spread, len(curves), noise, reference, scale)


def _test_inputs(
    tolerance: float,
    spread: float,
    runs: int,
    noise: tuple[Sequence[Any], Sequence[Any]],
    reference: FrozenTrial,
    scale: float = 1.0,
) -> dict[str, Any]:
    """The loss-gap test's inputs (:class:`EarlyStop`'s fields): the seed noise per check, the
    band, and the reference's curve, its samples × ``scale`` (equal time under a target)."""
    samples, losses = zip(*curve_of(reference), strict=True)
    return {
        "noise_samples": tuple(noise[0]),
        "noise_sds": tuple(noise[1]),
        "band": effective_tolerance(tolerance, spread)[0],
        "noise_sd": spread,
        "noise_runs": runs,
        "reference_trial": reference.number,
        "reference_samples": tuple(round(s * scale) for s in samples),
        "reference_losses": tuple(float(x) for x in losses),
    }


def _time_scale(
    trials: Sequence[FrozenTrial], reference: FrozenTrial, batch: int, margin: float
) -> float | None:
    """The factor from the reference's samples to those a trial at ``batch`` trains in the same
    time: the throughputs' ratio × ``1 + margin`` (a trial within the tie margin of the best
    time is not beaten); ``None`` while ``batch`` has no figure."""
    if decode(reference).configuration.global_batch_size == batch:
        return 1.0 + margin  # the same steps: the same time up to timing noise
    own = sorted(
        _throughput(t)
        for t in trials
        if decode(t).configuration.global_batch_size == batch
        and not is_same_as(t)
        and _positive(_throughput(t))
    )
    theirs = _throughput(reference)
    if not own or not _positive(theirs):
        return None
    return own[len(own) // 2] / theirs * (1.0 + margin)


def _throughput(trial: FrozenTrial) -> float:
    """The trial's measured throughput (its attribute; a finished trial's value), else nan."""
    value = decode(trial).throughput
    if value is None and trial.values:
        value = trial.values[1]
    return float(value) if isinstance(value, int | float) else math.nan


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value) and value > 0


def _reached(trials: Sequence[FrozenTrial]) -> list[FrozenTrial]:
    """The grid's own runs that reached the target, with a time to it."""
    return [
        t
        for t in trials
        if is_original(t)
        and decode(t).decision.reached_target
        and isinstance(decode(t).decision.time_to_target_s, int | float)
    ]


def _time_s(trial: FrozenTrial) -> float:
    """The seconds to the target of a trial that reached it (:func:`_reached`)."""
    return float(decode(trial).decision.time_to_target_s or 0.0)


def _best_time(trials: Sequence[FrozenTrial], reasons: list[str]) -> dict[str, Any]:
    """The time rule's input: the shortest time to the target so far, or none."""
    best = _fastest(_reached(trials))
    if best is None:
        reasons.append("no trial has reached the target yet")
        return {}
    return {"best_time_s": _time_s(best), "best_time_trial": best.number}


def _fastest(reached: Sequence[FrozenTrial]) -> FrozenTrial | None:
    """The trial of ``reached`` with the shortest time to the target (the first on a tie)."""
    return min(reached, key=lambda t: (_time_s(t), t.number), default=None)


def peers(
    spec: StudySpec, trials: Sequence[FrozenTrial], batch: int | None
) -> Sequence[FrozenTrial]:
    """The trials a grid trial at ``batch`` is measured against: all; with ``--lr-sweep`` only
    its own batch's, since the sweep asks which rate is best *at each batch*."""
    if not spec.search.sweep.rates or batch is None:
        return trials
    return [
        t
        for t in trials
        if t.params.get("global_batch_size", decode(t).configuration.global_batch_size) == batch
    ]


def seed_checks(spec: StudySpec) -> EarlyStop | None:
    """What a seed run carries so that it records its curve (no rule applies to it): the seed
    runs' spread at each check is the test's noise early in training."""
    if not records_curves(spec) or spec.search.run.target_loss is not None:
        return None
    return EarlyStop(alpha=DEFAULT_ALPHA)


def _seed_curves(record: Mapping[str, Any], trials: Sequence[FrozenTrial]) -> list[Any]:
    """The base configuration's curves: its grid trial's (the first seed) and the seed runs'."""
    curves = [c for c in record.get("curves") or [] if isinstance(c, list)]
    base = [
        t
        for t in trials
        if is_original(t)
        # At the base batch every rule trains alike (ratio 1): the grid's first of them ran.
        and decode(t).configuration.global_batch_size == record.get("global_batch_size")
        and curve_of(t)
    ]
    if base:
        curves.insert(0, curve_of(min(base, key=lambda t: t.number)))
    return curves


def best_reference(trials: Sequence[FrozenTrial]) -> FrozenTrial | None:
    """The finished grid trial with the lowest final loss and a positive finite curve, or None."""
    usable = [t for t in trials if is_original(t) and _usable(curve_of(t))]
    return min(usable, key=lambda t: (float(t.values[0]), t.number)) if usable else None


def curve_of(trial: FrozenTrial) -> list[list[float]]:
    """``[samples, loss]`` at each of the trial's checks (empty without them)."""
    for name in CURVES:
        curve = decode(trial).flat.get(name)
        if isinstance(curve, list) and curve:
            return curve
    return []


def _usable(curve: list[list[float]]) -> bool:
    return bool(curve) and all(
        isinstance(loss, int | float) and math.isfinite(loss) and loss > 0 for _, loss in curve
    )
