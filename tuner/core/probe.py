"""Finding the largest global batch that fits: doubling until out-of-memory, then bisection
(``docs/guide/probe.md``).

:class:`ProbeSearch` and :class:`GridProbe` are the pure part. The search travels in the probe
child's request (:func:`search_state`); the child tries sizes for a few steps each (a step's
peak memory comes early) until done, out of memory (:func:`try_until_oom`) or out of sizes
(:func:`sizes_per_child`). Then the driver starts a fresh child: a process that ran out of memory
does not reliably give it all back (measured on TensorFlow's capped CPU allocator).
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
    """At most how many sizes ``search`` may still try: a probe child's time limit scales with
    it."""
    if isinstance(search, GridProbe):
        return max(1, sum(1 for b in search.sizes if b not in search.fits))
    return 2 * max(1, search.limit // search.step).bit_length()


def sizes_per_child(kind: str, memory_capped: bool) -> int | None:
    """How many sizes one probe child may try (``None``: until an out-of-memory) on devices of
    ``kind``, with or without a memory cap.

    One under a cap: measured on both CPU caps, a size that fits in a fresh process no longer
    fits after a smaller size trained in the same one — TensorFlow's capped allocator keeps the
    regions it grew, and JAX's address-space cap counts the mappings the first size left
    (3072 fits fresh under 128 MiB per device and runs out of memory after 512 or 1536 on
    TensorFlow; 6144 fits fresh under 224 MiB and aborts after 1024 on JAX). A trial runs in a
    fresh process, so the probe must too. One on GPUs as well until measured there."""
    return 1 if memory_capped or kind == "gpu" else None


def try_until_oom(
    search: Search, attempt: Callable[[int], bool], most: int | None = None
) -> list[int]:
    """Try the search's sizes in its order with ``attempt`` (whether that size fits), recording
    each, until the search is done, a size does not fit or ``most`` sizes were tried; returns the
    sizes tried.

    They only grow: both searches go down only after a size did not fit, which ends the call. So
    a memory peak the framework keeps for the process's lifetime is the last size's own."""
    tried = []
    while (batch := search.next_batch()) is not None:
        fits = attempt(batch)
        search.record(batch, fits)
        tried.append(batch)
        if not fits or len(tried) == most:
            break
    return tried
