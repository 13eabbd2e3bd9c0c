"""Finding the largest global batch that fits: doubling until out-of-memory, then bisection.

:class:`ProbeSearch` is the pure part — which batch to try next given what fitted so far — so the
search is unit-testable without TensorFlow; ``tuner.driver.preflight.run_probe``
runs each attempt in a fresh child for a handful of steps (the peak memory of a step is reached
in its first steps).
"""

from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_PROBE_STEPS = 5
"""Training steps per probe attempt: a step's peak memory is reached in its first steps."""


class _Outcomes:
    """What fitted and what did not, so far."""

    fits: dict[int, bool]

    @property
    def largest_fitting(self) -> int | None:
        """The largest size that fitted so far."""
        sizes = [b for b, ok in self.fits.items() if ok]
        return max(sizes) if sizes else None

    @property
    def smallest_failing(self) -> int | None:
        """The smallest size that ran out of memory so far."""
        sizes = [b for b, ok in self.fits.items() if not ok]
        return min(sizes) if sizes else None

    def record(self, batch: int, fits: bool) -> None:
        """Record the outcome of trying ``batch``."""
        self.fits[batch] = fits


@dataclass
class ProbeSearch(_Outcomes):
    """Doubling from ``start`` until a size does not fit (or ``limit`` is reached), then bisection
    until the boundary is known to within ``resolution``. Every size is a multiple of ``step``
    (the number of replicas) and at most ``limit`` (the training set)."""

    start: int
    limit: int
    step: int = 1
    resolution: int = 1
    fits: dict[int, bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.step < 1 or self.start < self.step or self.limit < self.step:
            raise ValueError("probe sizes must be positive multiples of the replica count")
        self.resolution = max(self.resolution, self.step)

    def next_batch(self) -> int | None:
        """The next size to try, or ``None`` when the boundary is known well enough."""
        lo, hi = self.largest_fitting, self.smallest_failing
        if not self.fits:
            return self._round(min(self.start, self.limit))
        if hi is None:  # everything fitted so far: double, up to the limit
            assert lo is not None
            if lo >= self._round(self.limit):
                return None
            return self._round(min(2 * lo, self.limit))
        if lo is None:  # even the first size failed: halve
            smaller = self._round(hi // 2)
            return smaller if smaller >= self.step and smaller not in self.fits else None
        if hi - lo <= self.resolution:
            return None
        mid = self._round((lo + hi) // 2)
        return mid if lo < mid < hi else None

    def _round(self, batch: int) -> int:
        return max(self.step, batch // self.step * self.step)


@dataclass
class GridProbe(_Outcomes):
    """Bisection over a search's own grid of global batch sizes: which of them fit. Costs about
    log2(len(sizes)) + 1 launches; what lies between grid sizes is not resolved (the search never
    runs it)."""

    sizes: tuple[int, ...]
    fits: dict[int, bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.sizes = tuple(sorted(set(self.sizes)))
        if not self.sizes:
            raise ValueError("the grid has no batch sizes")

    @property
    def resolution(self) -> int:
        """The largest gap between neighbouring grid sizes."""
        gaps = [b - a for a, b in zip(self.sizes, self.sizes[1:], strict=False)]
        return max(gaps, default=0)

    def next_batch(self) -> int | None:
        """The next grid size to try, or ``None`` once the boundary is between two neighbours."""
        lo = self.largest_fitting
        hi = self.smallest_failing
        lo_i = self.sizes.index(lo) if lo is not None else -1
        hi_i = self.sizes.index(hi) if hi is not None else len(self.sizes)
        if hi_i - lo_i <= 1:
            return None
        return self.sizes[(lo_i + hi_i) // 2]
