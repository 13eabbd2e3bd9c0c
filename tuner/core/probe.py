"""Finding the largest global batch that fits: doubling until out-of-memory, then bisection
(``docs/guide/probe.md``, which says why each out-of-memory gets a fresh child).

:class:`ProbeSearch` and :class:`GridProbe` are the pure part. The search travels in the probe
child's request (:func:`search_state`); the child tries sizes for a few steps each until done, out
of memory (:func:`try_until_oom`) or out of sizes (:func:`sizes_per_child`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

DEFAULT_PROBE_STEPS = 5
"""Training steps per probe attempt: a step's peak memory is reached in its first steps."""


class _Outcomes:
    """What fitted and what did not, so far."""

    fits: dict[int, bool]

    @property
    def largest_fitting(self) -> int | None:
        return max((b for b, ok in self.fits.items() if ok), default=None)

    @property
    def smallest_failing(self) -> int | None:
        return min((b for b, ok in self.fits.items() if not ok), default=None)

    def record(self, batch: int, fits: bool) -> None:
        self.fits[batch] = fits


@dataclass
class ProbeSearch(_Outcomes):
    """Doubling, then bisection to ``resolution``; sizes multiples of ``step``, within ``limit``."""

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
    """Bisection over a search's own grid of global batch sizes: which of them fit."""

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


Search = ProbeSearch | GridProbe


def search_state(search: Search) -> dict[str, Any]:
    """``search`` as JSON-ready data, what it knows so far included (for the probe's request)."""
    fits = sorted([batch, ok] for batch, ok in search.fits.items())
    if isinstance(search, GridProbe):
        return {"kind": "grid", "sizes": list(search.sizes), "fits": fits}
    return {
        "kind": "doubling",
        "start": search.start,
        "limit": search.limit,
        "step": search.step,
        "resolution": search.resolution,
        "fits": fits,
    }


def search_from_state(state: dict[str, Any]) -> Search:
    """The search :func:`search_state` described, in the same state."""
    search: Search
    if state["kind"] == "grid":
        search = GridProbe(tuple(int(b) for b in state["sizes"]))
    else:
        search = ProbeSearch(
            start=int(state["start"]),
            limit=int(state["limit"]),
            step=int(state["step"]),
            resolution=int(state["resolution"]),
        )
    for batch, ok in state.get("fits", []):
        search.record(int(batch), bool(ok))
    return search


def most_sizes_left(search: Search) -> int:
    """At most how many sizes ``search`` may still try (a child's time limit scales with it)."""
    if isinstance(search, GridProbe):
        return max(1, sum(1 for b in search.sizes if b not in search.fits))
    return 2 * max(1, search.limit // search.step).bit_length()


def sizes_per_child(kind: str, memory_capped: bool, hosts: int = 1) -> int | None:
    """How many sizes one probe child may try on ``kind`` (``None``: until out of memory). One
    under a cap: a size that fits a fresh process no longer fits after a smaller one trained
    in it (3072 under 128 MiB after 512 on TensorFlow's capped allocator; 6144 under 224 MiB
    after 1024 on JAX's address-space cap), and a trial runs fresh. One on GPUs until measured.
    One across hosts: a rank that cannot fit a size must end its child, and the gang's run with
    it (:func:`tuner.core.gang.combine`), not try the next size while the others wait."""
    return 1 if memory_capped or kind == "gpu" or hosts > 1 else None


def try_until_oom(
    search: Search, attempt: Callable[[int], bool], most: int | None = None
) -> list[int]:
    """Try and record the search's sizes with ``attempt`` until it is done, a size does not fit
    or ``most`` were tried; the sizes tried. They only grow (a search goes down only after a
    failure, which ends the call), so a peak kept for the process's life is the last size's."""
    tried = []
    while (batch := search.next_batch()) is not None:
        fits = attempt(batch)
        search.record(batch, fits)
        tried.append(batch)
        if not fits or len(tried) == most:
            break
    return tried
