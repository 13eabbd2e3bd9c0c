"""The probe's search (pure): doubling, bisection, resolution, limits."""

from __future__ import annotations

import pytest

from tuner.core.probe import ProbeSearch


def _run(search: ProbeSearch, capacity: int) -> list[int]:
    tried = []
    while (batch := search.next_batch()) is not None:
        tried.append(batch)
        search.record(batch, batch <= capacity)
    return tried


def test_doubles_then_bisects_to_the_resolution():
    search = ProbeSearch(start=64, limit=100_000, step=2, resolution=32)
    tried = _run(search, capacity=1500)
    assert tried[:6] == [64, 128, 256, 512, 1024, 2048]
    assert search.largest_fitting <= 1500 < search.smallest_failing
    assert search.smallest_failing - search.largest_fitting <= 32
    assert all(b % 2 == 0 for b in tried)
    assert len(tried) == 6 + 5  # 1024 -> 2048 bisected to 32 in five halvings


def test_stops_at_the_training_set_when_everything_fits():
    search = ProbeSearch(start=64, limit=1000, step=2)
    tried = _run(search, capacity=10**9)
    assert tried == [64, 128, 256, 512, 1000]
    assert search.largest_fitting == 1000 and search.smallest_failing is None


def test_halves_when_the_first_size_does_not_fit():
    search = ProbeSearch(start=512, limit=10_000, step=4, resolution=4)
    tried = _run(search, capacity=100)
    assert tried[:4] == [512, 256, 128, 64]
    assert 100 - 4 < search.largest_fitting <= 100


def test_nothing_fits():
    search = ProbeSearch(start=8, limit=10_000, step=2)
    assert _run(search, capacity=1) == [8, 4, 2]
    assert search.largest_fitting is None and search.smallest_failing == 2


def test_sizes_stay_multiples_of_the_replica_count():
    search = ProbeSearch(start=96, limit=5000, step=3, resolution=3)
    tried = _run(search, capacity=1000)
    assert all(b % 3 == 0 for b in tried)
    assert search.smallest_failing - search.largest_fitting <= 3


def test_rejects_impossible_settings():
    with pytest.raises(ValueError):
        ProbeSearch(start=1, limit=100, step=2)


def test_grid_probe_bisects_the_grid():
    from tuner.core.probe import GridProbe

    grid = GridProbe((512, 1024, 1536, 2048, 3072, 4096))
    tried = _run(grid, capacity=3136)
    assert tried == [1536, 3072, 4096]
    assert (grid.largest_fitting, grid.smallest_failing) == (3072, 4096)
    everything = GridProbe((64, 128, 256))
    assert _run(everything, capacity=10**6) == [128, 256]
    assert everything.smallest_failing is None
    nothing = GridProbe((64, 128, 256))
    assert _run(nothing, capacity=1) == [128, 64]
    assert nothing.largest_fitting is None
