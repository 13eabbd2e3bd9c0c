"""Ties in the recommendation: candidates whose 95 % intervals overlap the best one's are tied,
the smallest global batch of the tie is picked, and the JSON and the verdict say so."""

from __future__ import annotations

import pytest
from trials import make_trial, measured_trial, run_recommend, target_trial

from tuner.core.racing import TIE_RULE, to_repeat
from tuner.core.recommend._candidates import candidate_entries, choose, loss_tolerance
from tuner.core.stats import throughput_interval


def test_overlapping_intervals_tie_and_the_smaller_batch_is_picked() -> None:
    trials = [
        measured_trial(0, 64, runs=[980.0, 1000.0, 1020.0]),
        measured_trial(1, 128, runs=[990.0, 1030.0, 1050.0]),  # faster, within the noise
        measured_trial(2, 256, runs=[500.0, 505.0, 510.0]),  # clearly slower
    ]
    rec = run_recommend(trials)
    assert rec["trial_number"] == 0 and rec["global_batch_size"] == 64
    assert rec["tied_with"] == [1]
    assert rec["tie_rule"] == TIE_RULE
    assert rec["runs"] == 3
    assert rec["throughput_ci_method"] == "t over 3 runs"
    low, high = rec["throughput_ci"]
    assert low < 1000.0 < high
    assert "trial 1 is tied with the pick" in rec["verdict"]
    assert "smallest global batch (64)" in rec["verdict"]


def test_separated_intervals_pick_the_best_without_a_tie() -> None:
    trials = [
        measured_trial(0, 64, runs=[980.0, 1000.0, 1020.0]),
        measured_trial(1, 128, runs=[1990.0, 2000.0, 2010.0]),
    ]
    rec = run_recommend(trials)
    assert rec["trial_number"] == 1
    assert rec["tied_with"] == [] and rec["tie_rule"] == ""
    assert "tied" not in rec["verdict"]


def test_without_intervals_the_highest_value_wins_as_before() -> None:
    # Studies stored before intervals: a value without one counts as exact.
    trials = [
        make_trial(0, 64, loss=1.0, throughput=100.0),
        make_trial(1, 128, loss=1.0, throughput=101.0),
    ]
    rec = run_recommend(trials)
    assert rec["trial_number"] == 1 and rec["tied_with"] == []
    assert rec["throughput_ci"] is None and rec["throughput_ci_method"] is None
    assert rec["runs"] == 1


def test_an_old_trial_gets_its_interval_from_its_window_rates() -> None:
    # The first window holds compilation and is left out, as the run's median leaves it out.
    trial = make_trial(
        0, 64, loss=1.0, throughput=1000.0, epoch_throughputs=[10.0, 990, 1000, 1010]
    )
    rec = run_recommend([trial])
    assert rec["throughput_ci_method"].startswith("windows of 1 run")
    low, high = rec["throughput_ci"]
    assert low < 1000.0 < high and low > 10.0


def test_a_same_as_trial_is_never_a_candidate_nor_tied() -> None:
    trials = [
        measured_trial(0, 64, "none", runs=[1000.0, 1010.0]),
        measured_trial(1, 64, "sqrt", runs=[1000.0, 1010.0], same_as=0),
        measured_trial(2, 128, "none", runs=[990.0, 1020.0]),
    ]
    rec = run_recommend(trials)
    assert rec["candidates"] == [0, 2]
    assert rec["trial_number"] == 0 and rec["tied_with"] == [2]


def test_time_to_target_ties_by_the_time_interval() -> None:
    trials = [
        target_trial(0, 64, times=[10.0, 11.0, 12.0], samples=4096),
        target_trial(1, 128, times=[9.5, 10.5, 11.5], samples=8192),  # faster, within the noise
        target_trial(2, 256, times=[30.0, 31.0, 32.0], samples=16384),
    ]
    rec = run_recommend(trials, target_loss=0.1)
    assert rec["policy"] == "time-to-target"
    assert rec["trial_number"] == 0 and rec["tied_with"] == [1]
    assert rec["candidates"] == [0, 1, 2]


def test_goodput_ties_on_the_throughput_interval_scaled_by_efficiency() -> None:
    trials = [
        measured_trial(0, 64, runs=[1000.0, 1010.0], goodput=900.0),
        measured_trial(1, 128, runs=[1000.0, 1010.0], goodput=300.0),
    ]
    entries = candidate_entries(trials, "goodput", 0.02)
    interval, runs = entries[1].interval, throughput_interval([1000.0, 1010.0], [])
    assert interval is not None and runs is not None and entries[1].value == 300.0
    scale = 300.0 / 1005.0  # goodput over the median throughput
    assert (interval.low, interval.high) == pytest.approx((runs.low * scale, runs.high * scale))
    assert "statistical efficiency" in interval.method
    rec = run_recommend(trials, policy="goodput")
    assert rec["trial_number"] == 0 and rec["tied_with"] == []


def test_racing_gets_the_same_candidates_with_unknown_intervals_kept_unknown() -> None:
    trials = [
        make_trial(0, 64, loss=1.0, throughput=100.0),
        make_trial(1, 128, loss=1.0, throughput=101.0),
        make_trial(2, 256, loss=5.0, throughput=900.0),  # outside the loss tolerance
    ]
    entries = candidate_entries(trials, "loss-then-throughput", 0.02)
    assert [(e.number, e.interval, e.runs, e.batch) for e in entries] == [
        (0, None, 1, 64),
        (1, None, 1, 128),
    ]
    assert to_repeat(entries, 3) == [0, 1]  # both need a second run before anything is decided
    chosen, decision = choose([trials[0], trials[1]], "loss-then-throughput")
    assert chosen.number == decision.chosen == 1


def test_the_tolerance_decides_who_can_tie() -> None:
    trials = [
        measured_trial(0, 64, runs=[980.0, 1000.0, 1020.0], loss=1.00),
        measured_trial(1, 128, runs=[990.0, 1030.0, 1050.0], loss=1.10),  # 10 % worse loss
    ]
    assert run_recommend(trials)["tied_with"] == []
    seeds = {"2x cpu": {"final_losses": [1.0, 1.2, 0.9], "spread": 0.15}}
    rec = run_recommend(trials, seed_noise=seeds)
    assert rec["candidates"] == [0, 1] and rec["tied_with"] == [1]
    assert loss_tolerance(0.02, seeds["2x cpu"]).applied == pytest.approx(0.30)
