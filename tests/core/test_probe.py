"""The probe's search (pure): doubling, bisection, resolution, limits."""

from __future__ import annotations

import json

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


def test_a_search_travels_with_what_it_knows():
    from tuner.core.probe import GridProbe, search_from_state, search_state

    for search in (
        ProbeSearch(start=64, limit=5000, step=2, resolution=16),
        GridProbe((512, 1024, 1536, 2048)),
    ):
        search.record(search.next_batch(), True)
        state = search_state(search)
        again = search_from_state(json.loads(json.dumps(state)))  # as a request carries it
        assert type(again) is type(search) and again.fits == search.fits
        assert again.next_batch() == search.next_batch()
        assert search_state(again) == state


def test_a_child_tries_sizes_until_the_first_that_does_not_fit():
    from tuner.core.probe import GridProbe, try_until_oom

    grid = GridProbe((512, 1024, 1536, 2048, 3072, 4096))
    fits = lambda batch: batch <= 1024  # noqa: E731
    assert try_until_oom(grid, fits) == [1536]  # out of memory: the child stops
    assert try_until_oom(grid, fits) == [512, 1024]  # a fresh child goes on from there
    assert try_until_oom(grid, fits) == []
    assert (grid.largest_fitting, grid.smallest_failing) == (1024, 1536)
    everything = GridProbe((64, 128, 256))
    assert try_until_oom(everything, lambda batch: True) == [128, 256]


def test_children_that_stop_at_each_oom_find_what_one_search_finds():
    from tuner.core.probe import try_until_oom

    whole = ProbeSearch(start=64, limit=100_000, step=2, resolution=32)
    tried = _run(whole, capacity=1500)
    split = ProbeSearch(start=64, limit=100_000, step=2, resolution=32)
    children = []
    while split.next_batch() is not None:
        children.append(try_until_oom(split, lambda batch: batch <= 1500))
    assert [b for child in children for b in child] == tried
    # Each child ends at an out-of-memory (the last may end with the search) and has no other.
    assert all(child[-1] > 1500 for child in children[:-1])
    assert all(b <= 1500 for child in children for b in child[:-1])
    assert all(child == sorted(set(child)) for child in children)  # sizes only grow in a child
    assert (split.largest_fitting, split.smallest_failing) == (
        whole.largest_fitting,
        whole.smallest_failing,
    )


def test_a_search_bounds_the_sizes_it_may_still_try():
    from tuner.core.probe import GridProbe, most_sizes_left, try_until_oom

    grid = GridProbe((512, 1024, 1536, 2048))
    assert most_sizes_left(grid) == 4
    try_until_oom(grid, lambda batch: batch <= 1024)
    assert most_sizes_left(grid) == 4 - len(grid.fits)
    for capacity in (1, 700, 5000, 10**9):
        search = ProbeSearch(start=64, limit=5000, step=2, resolution=2)
        bound = most_sizes_left(search)
        assert len(_run(search, capacity)) <= bound


def test_one_size_per_child_under_a_memory_cap_or_on_gpus():
    from tuner.core.probe import GridProbe, sizes_per_child, try_until_oom

    assert sizes_per_child("cpu", memory_capped=False) is None
    assert sizes_per_child("cpu", memory_capped=True) == 1
    assert sizes_per_child("gpu", memory_capped=False) == 1
    grid = GridProbe((512, 1024, 1536, 2048, 3072, 4096))
    assert try_until_oom(grid, lambda batch: True, most=1) == [1536]
    assert try_until_oom(grid, lambda batch: True, most=2) == [3072, 4096]
