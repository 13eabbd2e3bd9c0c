"""The measured learning-rate law: the best rate ``lr*`` at each global batch, and how it scales
(``docs/guide/lr-law.md``). Pure (NumPy only).

:func:`measure_law` fits ``log lr*`` on ``log B`` by weighted least squares (weights from the
batches' intervals), then a hinge at each inner batch: a *plateau* when the slope past it is
significantly lower, a *surge* when it is significantly negative; with a break, ``alpha`` is the
slope below it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from tuner.core.lr_star import BestRate, best_rate
from tuner.core.scaling import SWEEP_EXTRA
from tuner.core.stats import Z95, t_quantile

RULE_EXPONENTS: dict[str, float] = {"none": 0.0, "sqrt": 0.5, "linear": 1.0}
"""The exponent of ``B`` each fixed rule assumes: ``lr ∝ B^alpha``."""


@dataclass(frozen=True)
class Slope:
    """A fitted exponent and its 95 % interval."""

    value: float
    low: float
    high: float


@dataclass(frozen=True)
class Law:
    """How ``lr*`` scales with the global batch."""

    regime: str
    """``power-law``, ``plateau``, ``surge``, or ``unresolved`` (under two uncensored ``lr*``)."""
    alpha: Slope | None
    """The small-batch exponent (below the break, when there is one; else over all batches)."""
    stars: tuple[BestRate, ...]
    alpha_all: Slope | None = None
    """One power law through every uncensored batch."""
    break_batch: int | None = None
    """The batch past which ``lr*`` stops growing (plateau) or falls (surge)."""
    after: Slope | None = None
    """The exponent past :attr:`break_batch`."""
    noise_scale: float | None = None
    words: str = ""
    extra: tuple[tuple[int, str, int], ...] = ()
    """``(batch, side, rates)``: how many rates the adaptive sweep added past its edge on
    ``side`` (``above``/``below``) at ``batch`` (:func:`tuner.core.adaptive_sweep.extension`)."""
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, object]:
        """The JSON's ``lr_law`` block (batches as text keys)."""
        return {
            "alpha": self.alpha.value if self.alpha else None,
            "alpha_ci": [self.alpha.low, self.alpha.high] if self.alpha else None,
            "regime": self.regime,
            "lr_star_by_batch": {str(s.batch): s.lr for s in self.stars},
            "lr_star_ci_by_batch": {str(s.batch): [s.low, s.high] for s in self.stars},
            "lr_star_method_by_batch": {str(s.batch): s.method for s in self.stars},
            "censored_batches": {str(s.batch): s.censored for s in self.stars if s.censored},
            "stopped_points_by_batch": {str(s.batch): s.stopped for s in self.stars if s.stopped},
            "extra_rates_by_batch": _extra_by_batch(self.extra),
            "lr_star_criterion_by_batch": {str(s.batch): s.criterion for s in self.stars},
            "critical_batch": self.break_batch,
            "slope_past_critical": self.after.value if self.after else None,
            "slope_past_critical_ci": [self.after.low, self.after.high] if self.after else None,
            "alpha_all_batches": self.alpha_all.value if self.alpha_all else None,
            "alpha_all_batches_ci": (
                [self.alpha_all.low, self.alpha_all.high] if self.alpha_all else None
            ),
            "noise_scale": self.noise_scale,
            "words": self.words,
        }

    def star_at(self, batch: int) -> BestRate | None:
        """The uncensored ``lr*`` measured at ``batch`` (``None``: none, or only a bound)."""
        return next((s for s in self.stars if s.batch == batch and not s.censored), None)


def _extra_by_batch(extra: Iterable[tuple[int, str, int]]) -> dict[str, dict[str, int]]:
    """``{"64": {"above": 2}}``: the rates the sweep added past its edges (none: left out)."""
    block: dict[str, dict[str, int]] = {}
    for batch, side, rates in extra:
        if rates:
            block.setdefault(str(batch), {})[side] = rates
    return block


def _wls(
    y: np.ndarray, se: np.ndarray, design: np.ndarray
) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Weighted least squares with known standard errors: coefficients, covariance, chi² and the
    95 % quantile; a reduced chi² > 1 inflates the covariance and takes Student's t."""
    w = 1.0 / se**2
    xtw = design.T * w
    cov = np.linalg.inv(xtw @ design)
    coef = cov @ (xtw @ y)
    chi2 = float(np.sum(w * (y - design @ coef) ** 2))
    dof = len(y) - design.shape[1]
    if dof > 0 and chi2 > dof:
        return coef, cov * (chi2 / dof), chi2, t_quantile(dof)
    return coef, cov, chi2, Z95


def _slope(value: float, variance: float, q: float) -> Slope:
    half = q * math.sqrt(max(variance, 0.0))
    return Slope(float(value), float(value - half), float(value + half))


def _power_law(x: np.ndarray, y: np.ndarray, se: np.ndarray) -> Slope:
    coef, cov, _, q = _wls(y, se, np.column_stack([np.ones_like(x), x]))
    return _slope(coef[1], cov[1, 1], q)


def _hinge(x: np.ndarray, y: np.ndarray, se: np.ndarray) -> tuple[int, Slope, Slope, Slope] | None:
    """The best break of a two-slope fit, the slopes before and after, their difference (``None``
    below four batches)."""
    if len(x) < 4:
        return None
    fits = []
    for i in range(1, len(x) - 1):
        design = np.column_stack([np.ones_like(x), np.minimum(x, x[i]), np.maximum(x - x[i], 0.0)])
        coef, cov, chi2, q = _wls(y, se, design)
        fits.append((chi2, i, coef, cov, q))
    _, i, coef, cov, q = min(fits, key=lambda fit: fit[0])
    drop = _slope(coef[1] - coef[2], cov[1, 1] + cov[2, 2] - 2 * cov[1, 2], q)
    return i, _slope(coef[1], cov[1, 1], q), _slope(coef[2], cov[2, 2], q), drop


def measure_law(
    stars: Sequence[BestRate],
    noise_scale: float | None = None,
    extra: Iterable[tuple[int, str, int]] = (),
) -> Law:
    """The law through the batches' ``lr*`` (censored ones only named)."""
    stars = tuple(sorted(stars, key=lambda s: s.batch))
    usable = [s for s in stars if not s.censored]
    if len(usable) < 2:
        law = Law("unresolved", None, stars, noise_scale=noise_scale, extra=tuple(extra))
        return replace(law, words=_describe(law))
    x = np.log([s.batch for s in usable])
    y = np.log([s.lr for s in usable])
    se = np.array([s.log_se for s in usable])
    overall = _power_law(x, y, se)
    hinge = _hinge(x, y, se)
    law = Law("power-law", overall, stars, overall, noise_scale=noise_scale)
    if hinge is not None:
        i, before, after, drop = hinge
        if drop.low > 0:  # the slope past the break is lower than before it, beyond the noise
            regime = "surge" if after.high < 0 else "plateau"
            law = Law(regime, before, stars, overall, usable[i].batch, after, noise_scale)
    law = replace(law, extra=tuple(extra))
    return replace(law, words=_describe(law))


def alpha_words(alpha: Slope) -> str:
    """``alpha = 0.62 (0.48–0.77): between sqrt and linear; linear is ruled out``."""
    text = f"alpha = {alpha.value:.2f} ({alpha.low:.2f}–{alpha.high:.2f})"
    inside = [r for r, e in RULE_EXPONENTS.items() if alpha.low <= e <= alpha.high]
    out = [r for r in RULE_EXPONENTS if r not in inside]
    below = [r for r, e in RULE_EXPONENTS.items() if e <= alpha.value]
    above = [r for r, e in RULE_EXPONENTS.items() if e > alpha.value]
    if below and above:
        where = f"between {below[-1]} and {above[0]}"
    else:
        where = f"above {below[-1]}" if below else f"below {above[0]}"
    parts = [where]
    if inside:
        parts.append(f"consistent with {_listed(inside)}")
    if out:
        verb = "is" if len(out) == 1 else "are"
        parts.append(f"{_listed(out)} {verb} ruled out")
    return f"{text}: {'; '.join(parts)}"


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _describe(law: Law) -> str:
    sentences: list[str] = []
    if law.alpha is None:
        sentences.append(
            "the best learning rate could not be located at two batches or more: too few rates "
            "per batch, or the best one at the sweep's edge"
        )
    else:
        scope = "below the critical batch" if law.break_batch else "over the batches"
        sentences.append(f"{alpha_words(law.alpha)} ({scope})")
    if law.regime in ("plateau", "surge") and law.after is not None:
        verb = "stops growing" if law.regime == "plateau" else "falls"
        after = law.after
        text = (
            f"lr* {verb} past batch {law.break_batch} (slope {after.value:.2f}, "
            f"{after.low:.2f}–{after.high:.2f})"
        )
        if law.regime == "plateau":
            text += ": the critical batch"
        if law.noise_scale:
            ratio = law.break_batch / law.noise_scale if law.break_batch else float("nan")
            text += f"; the measured gradient noise scale is {law.noise_scale:.3g} ({ratio:.2g}×)"
        sentences.append(text)
    stopped = sum(star.stopped for star in law.stars)
    if stopped:
        sentences.append(
            f"{stopped} rate(s) stopped early as worse than the best at their batch count as "
            "walls, not as final losses"
        )
    timed = [str(star.batch) for star in law.stars if star.criterion != "final loss"]
    if timed:
        sentences.append(f"lr* by time to the target at batch {', '.join(timed)}")
    extra = {(batch, side): rates for batch, side, rates in law.extra}
    for star in law.stars:
        if star.censored:
            side = "smallest" if star.censored == "below" else "largest"
            sign = "<=" if star.censored == "below" else ">="
            added = extra.get((star.batch, star.censored))
            sentences.append(
                f"at batch {star.batch} the {side} rate tried was best (lr* {sign} "
                f"{star.lr:.3g})" + _past_edge(star.censored, added)
            )
    return "; ".join(sentences)


def _past_edge(side: str, added: int | None) -> str:
    """The end of a censored batch's sentence: what the sweep did past its edge there."""
    if not added:
        return ": widen the sweep there"
    rates = f"{added} rate{'s' if added > 1 else ''} {side} the sweep"
    if added < SWEEP_EXTRA:  # the budget, or the search's end, stopped it first
        return f" after {rates} (stopped before its cap of {SWEEP_EXTRA}): widen the sweep there"
    larger = "larger" if side == "above" else "smaller"
    return (
        f" after {rates}, the most it adds (its cap, SWEEP_EXTRA = {SWEEP_EXTRA}): lr* lies "
        f"further out; move the sweep there with a {larger} base_lr"
    )


def law_from_points(
    points_by_batch: Mapping[int, Iterable[tuple[float, float]]],
    sigma: float | None = None,
    noise_scale: float | None = None,
    worse_by_batch: Mapping[int, Iterable[float]] | None = None,
    criterion_by_batch: Mapping[int, str] | None = None,
    extra: Iterable[tuple[int, str, int]] = (),
) -> Law | None:
    """The law of a study's ``(learning_rate, value)`` points by batch, or ``None`` (no batch has
    three rates). ``criterion_by_batch``: what a batch's values are (default the final loss,
    whose noise is ``sigma``; a time to the target assumes none)."""
    worse = worse_by_batch or {}
    criteria = criterion_by_batch or {}
    stars = []
    for batch, points in sorted(points_by_batch.items()):
        criterion = criteria.get(batch, "final loss")
        noise = sigma if criterion == "final loss" else None
        star = best_rate(batch, points, noise, worse=worse.get(batch, ()), criterion=criterion)
        if star is not None:
            stars.append(star)
    return measure_law(stars, noise_scale, extra) if stars else None
