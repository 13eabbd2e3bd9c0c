"""Prediction beside measurement: McCandlish et al. 2018's empirical model of large-batch
training (arXiv:1812.06162): to reach a loss, ``E(B) = E_min (1 + B / B_noise)`` samples and
``S(B) = S_min (1 + B_noise / B)`` steps.

``B_noise`` is the median measured noise scale; ``E_min`` the median of ``E_meas / (1 + B /
B_noise)`` (one outlying batch cannot drag it). The agreement is judged held out: each measured
batch against the prediction fitted without it (a median fit agrees with itself by construction).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from optuna.trial import FrozenTrial

from tuner.core.record import decode
from tuner.core.stats import relative_spread

MIN_BATCHES = 3
"""Measured batch sizes needed before the model is checked at all (two fix a line through)."""
AGREEMENT_BAND = 0.25
"""Every held-out measured/predicted ratio within 1 ± this: the model describes the data."""
MIN_NOISE_STEPS = 40
"""Below this many measured steps per trial (median) the noise scale's EMA is itself noisy."""
MAX_NOISE_SPREAD = 0.5
"""Relative spread of the trials' noise scales above which there is no one ``B_noise``."""


@dataclass(frozen=True)
class BatchPoint:
    """What one global batch measured (``None``: it did not reach the target)."""

    global_batch_size: int
    throughput: float | None
    samples_to_target: float | None = None
    time_to_target_s: float | None = None


def predict(
    points: Sequence[BatchPoint], noise_scales: Sequence[float], noise_steps: Sequence[int] = ()
) -> dict[str, Any]:
    """The JSON's ``prediction``; without a noise scale or a reached target ``trust`` says why."""
    scales = [s for s in noise_scales if _positive(s)]
    measured = [p for p in points if _positive(p.samples_to_target)]
    if not scales or not measured:
        why = (
            "no trial measured the gradient noise scale (it needs 2+ replicas and "
            "noise_scale = true)"
            if not scales
            else "no batch size reached the target, so there is nothing to fit"
        )
        return _empty(scales, f"No prediction: {why}.")
    b_noise = statistics.median(scales)
    e_min = _fit(measured, b_noise)
    per_batch = [
        _row(p, b_noise, e_min, measured) for p in sorted(points, key=lambda p: p.global_batch_size)
    ]
    ratios = [row["held_out_ratio"] for row in per_batch if row["held_out_ratio"] is not None]
    timed = [row for row in per_batch if row["predicted_time_to_target_s"] is not None]
    fastest = min(timed, key=lambda row: row["predicted_time_to_target_s"]) if timed else None
    reasons = _distrust(len(measured), ratios, scales, noise_steps)
    return {
        **_empty(scales, _trust_sentence(reasons, [p.global_batch_size for p in measured])),
        "e_min": e_min,
        "s_min": e_min / b_noise,
        "per_batch": per_batch,
        "agreement": statistics.median(ratios) if ratios else None,
        "fastest_predicted_batch": None if fastest is None else fastest["global_batch_size"],
        "trusted": not reasons,
    }


def predicted_samples(batch: float, b_noise: float, e_min: float) -> float:
    """E(B) = E_min (1 + B / B_noise)."""
    return e_min * (1 + batch / b_noise)


def predicted_steps(batch: float, b_noise: float, e_min: float) -> float:
    """S(B) = S_min (1 + B_noise / B) with S_min = E_min / B_noise (= E(B) / B)."""
    return e_min / b_noise * (1 + b_noise / batch)


def _fit(measured: Sequence[BatchPoint], b_noise: float) -> float:
    """E_min: the median of each measured batch's E_meas / (1 + B / B_noise)."""
    return statistics.median(
        float(p.samples_to_target or 0) / (1 + p.global_batch_size / b_noise) for p in measured
    )


def _row(
    point: BatchPoint, b_noise: float, e_min: float, measured: Sequence[BatchPoint]
) -> dict[str, Any]:
    batch = point.global_batch_size
    samples = predicted_samples(batch, b_noise, e_min)
    others = [p for p in measured if p is not point]
    held_out = None
    if point in measured and others:
        held_out = float(point.samples_to_target or 0) / predicted_samples(
            batch, b_noise, _fit(others, b_noise)
        )
    throughput = point.throughput if _positive(point.throughput) else None
    return {
        "global_batch_size": batch,
        "measured_samples": point.samples_to_target,
        "predicted_samples": samples,
        "predicted_steps": predicted_steps(batch, b_noise, e_min),
        "held_out_ratio": held_out,
        "throughput": throughput,
        "measured_time_to_target_s": point.time_to_target_s,
        "predicted_time_to_target_s": None if throughput is None else samples / throughput,
    }


def _distrust(
    n_measured: int, ratios: Sequence[float], scales: Sequence[float], steps: Sequence[int]
) -> list[str]:
    """Why the prediction should not be trusted (empty: it may be)."""
    reasons = []
    if n_measured < MIN_BATCHES:
        reasons.append(
            f"only {n_measured} batch size{'s' if n_measured != 1 else ''} reached the target "
            f"({MIN_BATCHES} or more are needed to check the model)"
        )
    worst = max(ratios, key=lambda r: abs(math.log(r)), default=None)
    if worst is not None and abs(worst - 1) > AGREEMENT_BAND:
        reasons.append(
            f"a measured batch needed {worst:.2f}× the samples predicted without it "
            f"(outside ±{100 * AGREEMENT_BAND:.0f} %)"
        )
    counted = [s for s in steps if isinstance(s, int | float)]
    if counted and statistics.median(counted) < MIN_NOISE_STEPS:
        reasons.append(
            f"B_noise rests on few steps ({statistics.median(counted):g} per trial, median)"
        )
    spread = relative_spread(scales)
    if spread is not None and spread > MAX_NOISE_SPREAD:
        reasons.append(f"B_noise varies a lot across trials (±{100 * spread:.0f} %)")
    return reasons


def _trust_sentence(reasons: Sequence[str], batches: Sequence[int]) -> str:
    if reasons:
        return "Do not trust it beyond the measured batches: " + "; ".join(reasons) + "."
    low, high = min(batches), max(batches)
    return (
        f"Trust it between global batches {low} and {high}: each measured batch is within "
        f"±{100 * AGREEMENT_BAND:.0f} % of the prediction made without it; beyond the largest "
        "batch with a measured throughput it predicts samples, not time."
    )


def _empty(scales: Sequence[float], trust: str) -> dict[str, Any]:
    return {
        "noise_scale": statistics.median(scales) if scales else None,
        "noise_scale_trials": len(scales),
        "e_min": None,
        "s_min": None,
        "per_batch": [],
        "agreement": None,
        "fastest_predicted_batch": None,
        "trusted": False,
        "trust": trust,
    }


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value) and value > 0


def points_from_trials(trials: Sequence[FrozenTrial]) -> list[BatchPoint]:
    """Per batch, the rule fewest samples to the target (a tuned rate), else best throughput."""
    by_batch: dict[int, list[FrozenTrial]] = {}
    for trial in trials:
        by_batch.setdefault(int(trial.params["global_batch_size"]), []).append(trial)
    points = []
    for batch, group in sorted(by_batch.items()):
        reached = [t for t in group if _positive(decode(t).decision.samples_to_target)]
        if reached:
            best = min(reached, key=lambda t: (decode(t).decision.samples_to_target, t.number))
            found = decode(best).decision
            reach = float(found.samples_to_target or 0), found.time_to_target_s
            points.append(BatchPoint(batch, float(best.values[1]), *reach))
        else:
            points.append(BatchPoint(batch, max(float(t.values[1]) for t in group)))
    return points


def prediction_from_trials(trials: Sequence[FrozenTrial]) -> dict[str, Any]:
    """:func:`predict` over ``trials`` (COMPLETE representatives of one signature and model)."""
    scales = [decode(t).result.gradient_noise_scale for t in trials]
    steps = [decode(t).result.noise_scale_steps for t in trials]
    return predict(
        points_from_trials(trials),
        [float(s) for s in scales if s is not None and _positive(s)],
        [int(s) for s in steps if s is not None and _positive(s)],
    )
