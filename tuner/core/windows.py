"""Trials bounded by samples: how many steps a trial trains, cut into timed windows.

``samples // global_batch`` steps, cut into 6 to 10 equal windows (the few steps that fill no
window are not trained; ``train_samples_used`` says how many were); the host synchronises only at
a window's end. The warm-up windows are measured, not assumed (:func:`warmup_windows`): XLA may
compile again in the second window (on an H200 under JAX: the second epoch 14× the third).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

MIN_TIMED_WINDOWS = 5
TARGET_WINDOWS = 10
WARMUP_FACTOR = 2.0
"""A leading window this many times slower than the run's steady windows is still warm-up."""
INPUT_BOUND_RATIO = 0.8
"""Training at this fraction or more of what the input pipeline alone delivers is input-bound."""


@dataclass(frozen=True)
class WindowPlan:
    """One untimed warm-up window, then ``timed_windows`` windows (each one Keras epoch)."""

    global_batch: int
    warmup_steps: int
    window_steps: int
    timed_windows: int

    @property
    def steps(self) -> int:
        return self.warmup_steps + self.window_steps * self.timed_windows

    @property
    def samples(self) -> int:
        return self.steps * self.global_batch


def plan_windows(train_samples: int, global_batch: int) -> WindowPlan:
    """A warm-up and :data:`MIN_TIMED_WINDOWS`+ equal timed windows; ``ValueError``: too few."""
    steps = train_samples // global_batch
    if steps < MIN_TIMED_WINDOWS + 1:
        raise ValueError(
            f"{train_samples} samples at global batch {global_batch} make {steps} steps; "
            f"a trial needs at least {MIN_TIMED_WINDOWS + 1} (one warm-up window and "
            f"{MIN_TIMED_WINDOWS} timed ones)"
        )
    counts = range(MIN_TIMED_WINDOWS + 1, min(TARGET_WINDOWS, steps) + 1)
    windows = min(counts, key=lambda count: (steps % count, -count))
    window = steps // windows
    return WindowPlan(global_batch, window, window, windows - 1)


def min_samples(global_batch: int) -> int:
    """The smallest sample budget that gives a trial at this batch enough windows."""
    return (MIN_TIMED_WINDOWS + 1) * global_batch


@dataclass(frozen=True)
class Throughput:
    """Samples per second over the timed windows: the median and the relative range."""

    median: float
    spread: float
    windows: tuple[float, ...]


def summarise(samples_per_window: int, seconds: list[float]) -> Throughput:
    """Throughput of each timed window and their median; ``spread`` is (max − min) / median."""
    rates = tuple(samples_per_window / s if s > 0 else 0.0 for s in seconds)
    if not rates:
        return Throughput(0.0, 0.0, ())
    median = statistics.median(rates)
    spread = (max(rates) - min(rates)) / median if median > 0 else 0.0
    return Throughput(median, spread, rates)


def is_input_bound(throughput: float, input_throughput: float | None) -> bool:
    """Whether training runs at :data:`INPUT_BOUND_RATIO` or more of the pipeline's own rate."""
    if not input_throughput or input_throughput <= 0:
        return False
    return throughput >= INPUT_BOUND_RATIO * input_throughput


def warmup_windows(seconds: Sequence[float]) -> int:
    """How many leading windows are warm-up: the first, then each next one slower than
    :data:`WARMUP_FACTOR` × the second half's median, at most half (0 for a single window)."""
    if len(seconds) < 2:
        return 0
    steady = statistics.median(seconds[len(seconds) // 2 :])
    count = 1
    while count < len(seconds) // 2 and seconds[count] > WARMUP_FACTOR * steady:
        count += 1
    return count


def warmup_excess(seconds: Sequence[float]) -> float:
    """The warm-up windows' time beyond the steady windows' (0 for one window)."""
    warm = warmup_windows(seconds)
    if warm == 0:
        return 0.0
    steady = statistics.median(seconds[warm:])
    return sum(max(0.0, s - steady) for s in seconds[:warm])
