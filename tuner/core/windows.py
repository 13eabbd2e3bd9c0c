"""Trials bounded by samples: how many steps a trial trains, cut into timed windows.

A trial trains on a fixed number of samples whatever its batch: ``samples // global_batch`` steps
(the remainder, less than one batch, is not trained). The steps are cut into equal windows; the
host synchronises with the devices only at a window's end. The first window holds tracing and
compilation and is not timed. The number of windows (6 to 10) is chosen so that the windows cover
the steps exactly where possible; the few steps that fill no window (fewer than the windows, and
usually none) are not trained either. ``train_samples_used`` says how many samples were.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

MIN_TIMED_WINDOWS = 5
TARGET_WINDOWS = 10
INPUT_BOUND_RATIO = 0.8
"""Training at this fraction or more of what the input pipeline alone delivers is input-bound."""


@dataclass(frozen=True)
class WindowPlan:
    """One untimed warm-up window of ``warmup_steps``, then ``timed_windows`` windows of
    ``window_steps`` each (all equal: each window is one Keras epoch over the stream)."""

    global_batch: int
    warmup_steps: int
    window_steps: int
    timed_windows: int

    @property
    def steps(self) -> int:
        """All steps the trial trains."""
        return self.warmup_steps + self.window_steps * self.timed_windows

    @property
    def samples(self) -> int:
        """All samples the trial trains (``steps × global batch``)."""
        return self.steps * self.global_batch


def plan_windows(train_samples: int, global_batch: int) -> WindowPlan:
    """Cut ``train_samples // global_batch`` steps into one warm-up and at least
    :data:`MIN_TIMED_WINDOWS` equal timed windows. Raises ``ValueError`` when there are too few
    steps for that (the caller says which budget to raise)."""
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
    """Whether training runs at :data:`INPUT_BOUND_RATIO` or more of the pipeline's own rate,
    so a faster pipeline (not a different batch) would raise it."""
    if not input_throughput or input_throughput <= 0:
        return False
    return throughput >= INPUT_BOUND_RATIO * input_throughput
