"""The learning-rate range test of ``tuner lr-find`` (Smith 2017; fastai's and Lightning's
``lr_find``) as pure functions. How the suggestion is found (the smoothed loss falling fastest per
decade of rate, an early spike left out: :func:`skipped_steps`, :data:`MIN_RUN_FRACTION`):
``docs/guide/lr-find.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from statistics import median

from tuner.core.errors import ConfigError
from tuner.core.options import named

DIVERGENCE_FACTOR = 4.0
"""The run has diverged once the smoothed loss is this many times its minimum (fastai's 4)."""
SKIP_FRACTION = 0.1
"""The share of the ramp's first steps left out of the suggestion and the divergence stop."""
MIN_SKIP = 5
MIN_RUN_FRACTION = 0.05
"""The shortest descent that counts, as a share of the ramp's steps (at least 3 points)."""
NEW_LOW_MARGIN = 0.02
"""How far above the lowest loss so far a point of a descent may be, as a share of the curve's
span (the smoothed curve still wobbles a little)."""
NOISE_Z = 2.0
"""Standard errors the loss must fall by over a descent: on a flat, noisy curve a short ramp's
smoothing lets a few low batches make a "lasting" descent of noise."""
WINDOW_FRACTION = 0.025
"""Half-width of the slope's centred difference, as a share of the ramp's steps (at least 1)."""


def check_range(min_lr: float, max_lr: float, steps: int) -> None:
    """Refuse a ramp that cannot be run, in one :class:`ConfigError` line."""
    for option, value in (("min_lr", min_lr), ("max_lr", max_lr)):
        if not (math.isfinite(value) and value > 0):
            raise ConfigError(f"{named(option)} must be a positive learning rate, got {value}")
    if max_lr <= min_lr:
        raise ConfigError(
            f"{named('max_lr')} ({max_lr:g}) must be above {named('min_lr')} ({min_lr:g})"
        )
    if steps < 20:
        raise ConfigError(f"{named('steps')} must be at least 20 for a range test, got {steps}")


def ramp(min_lr: float, max_lr: float, steps: int) -> list[float]:
    """Each step's rate, geometric from ``min_lr`` to ``max_lr`` (Keras's ``ExponentialDecay``)."""
    ratio = max_lr / min_lr
    return [min_lr * ratio ** (i / (steps - 1)) for i in range(steps)]


def default_beta(steps: int) -> float:
    """The EMA's factor for a ramp of ``steps``: a lag of 5 % of the ramp, at least 2 steps."""
    return 1.0 - 1.0 / max(2.0, 0.05 * steps)


def smooth(losses: Sequence[float], beta: float, skip: int = 0) -> list[float]:
    """The bias-corrected EMA of ``losses`` (Adam's), started after the first ``skip`` steps,
    which are NaN (an early spike would decay through it for long); a non-finite loss makes the
    rest non-finite."""
    average, out = 0.0, []
    for i, loss in enumerate(losses):
        if i < skip:
            out.append(math.nan)
            continue
        average = beta * average + (1.0 - beta) * loss
        out.append(average / (1.0 - beta ** (i + 1 - skip)))
    return out


def skipped_steps(steps: int) -> int:
    """The ramp's first steps that neither suggest a rate nor count as divergence."""
    return max(MIN_SKIP, round(SKIP_FRACTION * steps))


def diverged(smoothed: Sequence[float], skip: int, factor: float = DIVERGENCE_FACTOR) -> int | None:
    """The first step past ``skip`` whose smoothed loss (:func:`smooth` with that ``skip``) is
    non-finite or above ``factor`` × the minimum so far; ``None`` when none is."""
    best = math.inf
    for i, value in enumerate(smoothed):
        if i < skip:
            continue
        if not math.isfinite(value) or value > factor * best:
            return i
        best = min(best, value)
    return None


class DivergenceWatch:
    """The stop rule of :func:`diverged`, fed one loss at a time inside the run."""

    def __init__(self, steps: int, beta: float | None = None) -> None:
        self._beta = default_beta(steps) if beta is None else beta
        self._skip = skipped_steps(steps)
        self._losses: list[float] = []

    def add(self, loss: float) -> bool:
        """Add one step's loss; ``True`` once the run has diverged."""
        self._losses.append(loss)
        return diverged(smooth(self._losses, self._beta, self._skip), self._skip) is not None


@dataclass(frozen=True)
class Finding:
    """What a range test found; without a lasting descent no ``suggestion``, a ``reason``."""

    learning_rates: tuple[float, ...]
    losses: tuple[float, ...]
    smoothed: tuple[float, ...]
    suggestion: float | None
    suggestion_step: int | None
    slope: float | None
    """The smoothed loss's change per decade of rate at the steepest point (negative)."""
    min_loss_lr: float | None
    """The rate at the smoothed loss's minimum (before divergence)."""
    diverged_lr: float | None
    """The rate at which the run diverged (``None``: it did not, within the ramp)."""
    skipped: int
    beta: float
    reason: str | None = None


def suggest(
    learning_rates: Sequence[float],
    losses: Sequence[float],
    *,
    planned_steps: int | None = None,
    beta: float | None = None,
) -> Finding:
    """The suggested rate of a range test: the steepest lasting descent of the smoothed loss
    before its minimum and divergence. ``planned_steps``, the ramp's length (default: the steps
    run), sets the skip, the window and the smoothing."""
    if len(learning_rates) != len(losses):
        raise ValueError("one learning rate per loss")
    planned = planned_steps or len(losses)
    finding, end = _read_curve(learning_rates, losses, planned, beta)
    usable = [i for i in range(finding.skipped, end) if math.isfinite(finding.smoothed[i])]
    if len(usable) < 3:
        return replace(
            finding,
            reason=f"the run diverged within its first steps (at lr {learning_rates[end]:.3g}): "
            f"lower {named('min_lr')}",
        )
    lowest = min(usable, key=lambda i: finding.smoothed[i])
    finding = replace(finding, min_loss_lr=learning_rates[lowest])
    skip = finding.skipped
    steepest = _steepest(learning_rates, finding.smoothed, skip, lowest, planned)
    if steepest is None or not _beyond_noise(losses, steepest[2], skip, end, planned):
        return replace(
            finding,
            reason="the loss did not fall steadily over the range: widen it "
            f"({named('min_lr')}, {named('max_lr')}) or run more {named('steps')}",
        )
    step, slope, _ = steepest
    return replace(finding, suggestion=learning_rates[step], suggestion_step=step, slope=slope)


def _read_curve(
    learning_rates: Sequence[float], losses: Sequence[float], planned: int, beta: float | None
) -> tuple[Finding, int]:
    """The curve smoothed, as a :class:`Finding` with no suggestion yet, and its usable end."""
    beta = default_beta(planned) if beta is None else beta
    skip = skipped_steps(planned)
    smoothed = smooth(losses, beta, skip)
    stop = diverged(smoothed, skip)
    finding = Finding(
        learning_rates=tuple(learning_rates),
        losses=tuple(losses),
        smoothed=tuple(smoothed),
        suggestion=None,
        suggestion_step=None,
        slope=None,
        min_loss_lr=None,
        diverged_lr=None if stop is None else learning_rates[stop],
        skipped=skip,
        beta=beta,
    )
    return finding, len(losses) if stop is None else stop


def _steepest(
    lrs: Sequence[float], smoothed: Sequence[float], skip: int, lowest: int, planned: int
) -> tuple[int, float, tuple[int, int]] | None:
    """(step, slope per decade, the descent's first and last step) of the steepest point of a
    lasting descent in ``[skip, lowest]``, or ``None``: points falling, each a new low (within
    :data:`NEW_LOW_MARGIN`), for :data:`MIN_RUN_FRACTION` of the ramp (at least 3)."""
    half = max(1, round(WINDOW_FRACTION * planned))
    values = smoothed[skip : lowest + 1]
    margin = NEW_LOW_MARGIN * (max(values) - min(values))
    low, falling = math.inf, []
    for i in range(skip, lowest + 1):
        lo, hi = max(skip, i - half), min(lowest, i + half)
        decades = math.log10(lrs[hi]) - math.log10(lrs[lo]) if hi > lo else 0.0
        slope = (smoothed[hi] - smoothed[lo]) / decades if decades > 0 else 0.0
        if slope < 0 and smoothed[i] <= low + margin:
            falling.append((i, slope))
        low = min(low, smoothed[i])
    shortest = max(3, round(MIN_RUN_FRACTION * planned))
    best: tuple[int, float, tuple[int, int]] | None = None
    for run in _runs(falling):
        if len(run) >= shortest:
            step, slope = min(run, key=lambda p: p[1])
            if best is None or slope < best[1]:
                best = (step, slope, (run[0][0], run[-1][0]))
    return best


def _beyond_noise(
    losses: Sequence[float], run: tuple[int, int], skip: int, end: int, planned: int
) -> bool:
    """Whether the raw loss's median after the descent ``run`` is below its median before it by
    more than the noise (per step, from second differences: blind to the trend). The skipped
    steps count here: they are data, only not a suggestion."""
    width = max(3, round(MIN_RUN_FRACTION * planned))
    first, last = run
    before = [x for x in losses[max(0, first - 2 * width) : first + 1] if math.isfinite(x)]
    # the descent's own last steps: the raw loss leads its smoothing, and past the descent it
    # may already be diverging
    after = [
        x for x in losses[max(first, last - width + 1) : min(end, last + 1)] if math.isfinite(x)
    ]
    steps = [x for x in losses[skip:end] if math.isfinite(x)]
    curvature = [abs(a - 2 * b + c) for a, b, c in zip(steps, steps[1:], steps[2:], strict=False)]
    if not before or not after or not curvature:
        return True
    noise = median(curvature) / (0.6745 * math.sqrt(6.0))  # the per-step standard deviation
    # the standard error of a median of n points is about 1.25 sigma / sqrt(n)
    error = 1.25 * noise * math.sqrt(1.0 / len(before) + 1.0 / len(after))
    return median(before) - median(after) > NOISE_Z * error


def _runs(points: list[tuple[int, float]]) -> list[list[tuple[int, float]]]:
    """``points`` (step, slope) cut where a step is missing."""
    runs: list[list[tuple[int, float]]] = []
    for point in points:
        if runs and runs[-1][-1][0] == point[0] - 1:
            runs[-1].append(point)
        else:
            runs.append([point])
    return runs


def spec_line(learning_rate: float) -> str:
    """The line to paste under ``[search]`` of a spec (``base_lr = 0.0032``)."""
    return f"base_lr = {learning_rate:.2g}"
