"""Racing and ties (tuner.core.racing) on planted measurements."""

from __future__ import annotations

import random
import statistics

from tuner.core.racing import (
    Entry,
    by_loss,
    gaps_to_best,
    is_tied,
    most_decisive_first,
    tie_set,
    to_repeat,
)
from tuner.core.stats import Interval, t_interval


def entry(number: int, value: float, low: float, high: float, runs: int = 2, batch: int = 64):
    return Entry(number, value, Interval(low, high, "t"), runs, batch)


def test_every_single_run_candidate_gets_a_second_run_first() -> None:
    entries = [entry(0, 100, 99, 101, runs=1), entry(1, 50, 49, 51, runs=1, batch=128)]
    assert to_repeat(entries, 3) == [0, 1]


def test_racing_is_off_with_one_repeat_or_no_candidate() -> None:
    entries = [entry(0, 100, 90, 110, runs=1), entry(1, 99, 90, 110, runs=1)]
    assert to_repeat(entries, 1) == []
    assert to_repeat([], 3) == []


def test_a_lone_candidate_gets_a_second_run_for_its_interval_and_no_more() -> None:
    assert to_repeat([entry(0, 100, 90, 110, runs=1)], 3) == [0]
    assert to_repeat([entry(0, 100, 90, 110, runs=2)], 3) == []


def test_racing_stops_when_the_intervals_separate() -> None:
    entries = [entry(0, 100, 95, 105), entry(1, 80, 75, 85, batch=128)]
    assert to_repeat(entries, 3) == []


def test_overlapping_candidates_repeat_until_max_repeats() -> None:
    entries = [entry(0, 100, 90, 110), entry(1, 98, 88, 108, batch=128), entry(2, 50, 45, 55)]
    assert to_repeat(entries, 3) == [0, 1]  # 2 is clearly slower: no more runs for it
    done = [entry(0, 100, 90, 110, runs=3), entry(1, 98, 88, 108, runs=3, batch=128)]
    assert to_repeat(done, 3) == []


def test_lower_is_better_for_time_to_target() -> None:
    entries = [entry(0, 10, 9, 11), entry(1, 20, 19, 21, batch=128), entry(2, 10.5, 9.5, 12)]
    assert to_repeat(entries, 3, higher_is_better=False) == [0, 2]
    assert tie_set(entries, higher_is_better=False)[0].number == 0


def test_a_clear_winner_has_no_tie() -> None:
    assert tie_set([entry(0, 100, 95, 105, batch=128), entry(1, 80, 75, 85)]) == [
        entry(0, 100, 95, 105, batch=128)
    ]


def rule(number: int, value: float, loss: float, runs: int = 1, batch: int = 128) -> Entry:
    """A candidate at ``batch`` with an interval ±5 % wide: rules at one batch share a
    computation, so only their learning rates (and losses) differ."""
    interval = Interval(value * 0.95, value * 1.05, "t")
    return Entry(number, value, interval, runs, batch, loss, (batch, "float32", 1, None))


def test_rivals_of_one_computation_get_no_repeats_the_loss_decided_them() -> None:
    # (128, sqrt) is faster but its loss is worse: no repeat can change the pick, at any stage.
    linear, sqrt = rule(2, 1000, 0.0040), rule(3, 1010, 0.0048)
    assert by_loss([linear, sqrt]) == {2: [sqrt]}
    assert to_repeat([linear, sqrt], 3) == [2]  # the kept one alone: its second run only
    twice = [rule(2, 1000, 0.0040, runs=2), rule(3, 1010, 0.0048)]
    assert to_repeat(twice, 3) == []
    assert [e.number for e in tie_set(twice)] == [2]
    assert gaps_to_best(twice) == []  # nothing left for more runs to resolve
    # Equal losses: the one with more runs stays kept, though its repeat (the representative
    # now) has the higher number: racing never switches to the rival it left behind.
    assert to_repeat([rule(3, 1010, 0.004), rule(4, 1000, 0.004, runs=2)], 3) == []


def test_rivals_at_two_batches_still_race_beside_a_same_batch_loser() -> None:
    entries = [rule(0, 990, 0.0046, batch=64), rule(2, 1000, 0.0040), rule(3, 1200, 0.0048)]
    assert to_repeat(entries, 3) == [0, 2]
    twice = [rule(0, 990, 0.0046, 2, 64), rule(2, 1000, 0.0040, 2), rule(3, 1200, 0.0048)]
    assert to_repeat(twice, 3) == [0, 2]  # 3 (the fastest) is no best: the loss ruled it out
    assert [e.number for e in tie_set(twice)] == [2, 0]
    assert most_decisive_first(twice, [0, 2]) == [2, 0]
    assert gaps_to_best(twice) == [(0, 0.01)]
    done = [rule(0, 990, 0.0046, 3, 64), rule(2, 1000, 0.0040, 3), rule(3, 1200, 0.0048)]
    assert to_repeat(done, 3) == []


def test_a_lone_kept_candidate_still_gets_its_second_run() -> None:
    # Batch 256 lost on the loss tolerance upstream; at 128 only the lower loss is kept.
    assert to_repeat([rule(4, 900, 0.0050), rule(5, 905, 0.0041)], 3) == [5]
    assert to_repeat([rule(4, 900, 0.0050), rule(5, 905, 0.0041, runs=2)], 3) == []
    # Without a computation (a time to target) each entry is kept alone, as before.
    assert to_repeat([entry(0, 10, 9, 11, runs=1), entry(1, 10, 9, 11, runs=1)], 3) == [0, 1]


def test_a_candidate_without_an_interval_cannot_be_ruled_out() -> None:
    best = entry(0, 100, 95, 105)
    assert is_tied(Entry(1, 10, None, 1, 64), best)


def test_simulated_racing_separates_real_differences_and_ties_equal_ones() -> None:
    """Configurations 20 % apart separate within 3 runs of 3 % noise; equal ones stay tied
    (with 2 runs, t has 1 degree of freedom: 12.7 standard errors, so a third run is usual)."""
    rng = random.Random(5)

    def race(means: dict[int, float]) -> tuple[list[int], dict[int, list[float]]]:
        runs = {n: [rng.gauss(m, 0.03 * m)] for n, m in means.items()}
        while True:
            entries = [
                Entry(n, statistics.median(v), t_interval(v), len(v), 64 * (n + 1))
                for n, v in runs.items()
            ]
            todo = to_repeat(entries, 3)
            if not todo:
                return [e.number for e in tie_set(entries)[1:]], runs
            for n in todo:
                runs[n].append(rng.gauss(means[n], 0.03 * means[n]))

    tied, runs = race({0: 10_000.0, 1: 12_000.0})
    assert tied == [] and all(len(v) <= 3 for v in runs.values())
    tied, runs = race({0: 10_000.0, 1: 10_000.0})
    assert tied and all(len(v) == 3 for v in runs.values())
