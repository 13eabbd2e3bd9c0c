"""Ties in the recommendation: at one global batch (one computation) the lower final loss is
picked, whatever the throughputs; between batches the ratio of the values decides: candidates
within the tie margin (5 %) of the best value are practically equal and the smallest global batch
of them is picked; a candidate the pick beats only within the noise (the ratio's 95 % interval
reaches 1) is a close call, not distinguishable from it; the JSON and the verdict say so."""

from __future__ import annotations

import pytest
from trials import make_trial, measured_trial, run_recommend, target_trial

from tuner.core.racing import to_repeat
from tuner.core.recommend._candidates import candidate_entries, choose, loss_tolerance
from tuner.core.recommend._ties import MARGIN_TIE_RULE, SAME_BATCH_RULE
from tuner.core.record import decode
from tuner.core.stats import ratio_interval, throughput_interval


def test_values_within_the_margin_tie_and_the_smaller_batch_is_picked() -> None:
    trials = [
        measured_trial(0, 64, runs=[980.0, 1000.0, 1020.0]),
        measured_trial(1, 128, runs=[990.0, 1030.0, 1050.0]),  # faster, within the noise
        measured_trial(2, 256, runs=[500.0, 505.0, 510.0]),  # clearly slower
    ]
    rec = run_recommend(trials)
    assert rec["trial_number"] == 0 and rec["global_batch_size"] == 64
    assert rec["tied_with"] == [1] and rec["tie_margin"] == 0.05
    assert rec["tie_rule"] == MARGIN_TIE_RULE
    assert rec["close_calls"] == []  # batch 256 is clearly slower: its ratio's interval is > 1
    assert rec["runs"] == 3
    assert rec["throughput_ci_method"] == "t over 3 runs"
    low, high = rec["throughput_ci"]
    assert low < 1000.0 < high
    assert "trial 1 is within 5 % of the best throughput (practically equal)" in rec["verdict"]
    assert "smallest global batch (64)" in rec["verdict"]


def test_overlapping_intervals_twice_as_fast_go_to_the_faster_not_distinguishable() -> None:
    # Issue 30: batch 128 at 20,793 samples/s (CI 12.4k-37.9k) and batch 64 at 10,480
    # (6.76k-18.6k): the intervals overlap, and batch 64 was picked at half the speed. Issue 46:
    # the words come from the ratio's interval alone (no bootstrap "1000 of 1000" beside it).
    trials = [
        measured_trial(0, 64, runs=[7600.0, 10480.0, 16000.0]),
        measured_trial(1, 128, runs=[13000.0, 20793.0, 31000.0]),
    ]
    first, second = decode(trials[0]).flat["throughput_ci"], decode(trials[1]).flat["throughput_ci"]
    assert first[1] > second[0]  # the two intervals overlap
    rec = run_recommend(trials)
    assert rec["trial_number"] == 1 and rec["global_batch_size"] == 128
    assert rec["tied_with"] == [] and rec["tie_rule"] == ""
    (call,) = rec["close_calls"]
    assert call["trial_number"] == 0 and call["global_batch_size"] == 64
    assert call["ratio"] == pytest.approx(20793.0 / 10480.0)
    low, high = call["ratio_ci"]
    assert low < 1 < high  # the data do not settle it
    assert "resamples" not in " ".join([*call, rec["verdict"]])
    assert (
        "batch 128 and batch 64 (trial 0) are not distinguishable in throughput (1.98×, 95 % CI "
        f"{low:.2f}–{high:.2f}); more repeats would settle it (--max-repeats above 3)"
    ) in rec["verdict"]
    assert run_recommend(trials)["close_calls"] == rec["close_calls"]


def test_at_one_batch_the_lower_loss_wins_whatever_the_throughput() -> None:
    # Issue 46: at batch 128, linear (loss 0.004403) and sqrt (0.005107, within the seed-noise
    # tolerance) do the same computation; sqrt measured faster, by noise, and was picked.
    seeds = {"2x cpu": {"final_losses": [1.0, 1.25, 0.88], "spread": 0.12}}
    linear = measured_trial(1, 128, "linear", runs=[52000.0, 57551.0, 63000.0], loss=0.004403)
    sqrt = measured_trial(2, 128, "sqrt", runs=[60000.0, 61935.0, 64000.0], loss=0.005107)
    slow = measured_trial(0, 64, runs=[30000.0, 30495.0, 31000.0], loss=0.0046)
    rec = run_recommend([slow, linear, sqrt], seed_noise=seeds)
    assert rec["candidates"] == [0, 1, 2]  # all within the tolerance: "equal" losses
    assert rec["trial_number"] == 1 and rec["lr_rule"] == "linear"  # the lower loss, slower
    assert rec["tied_with"] == [2] and rec["tie_rule"] == SAME_BATCH_RULE
    assert rec["close_calls"] == []  # batch 64 is clearly slower than batch 128
    assert rec["verdict"].endswith(
        "; trial 2 runs the same computation at batch 128 with another learning rate (a "
        "throughput difference is noise), so the lower final loss was picked"
    )
    # Reversed throughputs give the same pick: the throughput never decides at one batch.
    fast = measured_trial(1, 128, "linear", runs=[70000.0, 71000.0, 72000.0], loss=0.004403)
    assert run_recommend([slow, fast, sqrt], seed_noise=seeds)["trial_number"] == 1
    lossy = measured_trial(1, 128, "linear", runs=[52000.0, 57551.0, 63000.0], loss=0.0055)
    assert run_recommend([slow, lossy, sqrt], seed_noise=seeds)["trial_number"] == 2


def test_between_batches_the_throughput_decides_beside_the_loss_rule() -> None:
    # Batch 64's best loss does not carry it: between batches the throughput decides (as
    # before), and at batch 128 the lower loss of its two rates is the one compared.
    seeds = {"2x cpu": {"final_losses": [1.0, 1.25, 0.88], "spread": 0.12}}
    trials = [
        measured_trial(0, 64, runs=[30000.0, 30495.0, 31000.0], loss=0.0040),
        measured_trial(1, 128, "linear", runs=[55000.0, 55594.0, 56000.0], loss=0.0044),
        measured_trial(2, 128, "sqrt", runs=[60000.0, 61000.0, 62000.0], loss=0.0046),
    ]
    rec = run_recommend(trials, seed_noise=seeds)
    assert rec["trial_number"] == 1 and rec["tied_with"] == [2]
    # Practically equal across batches (within 5 %): the smaller batch, as before, and the
    # same-batch rival of the larger one is neither tied with it nor a close call.
    trials[0] = measured_trial(0, 64, runs=[54000.0, 55000.0, 56000.0], loss=0.0040)
    rec = run_recommend(trials, seed_noise=seeds)
    assert rec["trial_number"] == 0 and rec["tied_with"] == [1]
    assert rec["tie_rule"] == MARGIN_TIE_RULE and rec["close_calls"] == []


def test_the_margin_decides_what_is_practically_equal() -> None:
    trials = [
        measured_trial(0, 64, runs=[980.0, 1000.0, 1020.0]),
        measured_trial(1, 128, runs=[990.0, 1030.0, 1050.0]),  # 3 % faster
    ]
    strict = run_recommend(trials, tie_margin=0.0)
    assert strict["trial_number"] == 1 and strict["tied_with"] == []
    assert [c["trial_number"] for c in strict["close_calls"]] == [0]
    loose = run_recommend(trials, tie_margin=0.05)
    assert loose["trial_number"] == 0 and loose["tied_with"] == [1]


def test_the_ratio_interval_is_the_speedups_arithmetic() -> None:
    trials = [
        measured_trial(0, 64, runs=[7600.0, 10480.0, 16000.0]),
        measured_trial(1, 128, runs=[13000.0, 20793.0, 31000.0]),
    ]
    (call,) = run_recommend(trials)["close_calls"]
    cis = [throughput_interval(decode(t).result.repeats, []) for t in trials]
    expected = ratio_interval(20793.0, cis[1], 10480.0, cis[0])
    assert expected is not None
    assert call["ratio_ci"] == pytest.approx(expected.as_list())


def test_separated_intervals_pick_the_best_without_a_tie() -> None:
    trials = [
        measured_trial(0, 64, runs=[980.0, 1000.0, 1020.0]),
        measured_trial(1, 128, runs=[1990.0, 2000.0, 2010.0]),
    ]
    rec = run_recommend(trials)
    assert rec["trial_number"] == 1
    assert rec["tied_with"] == [] and rec["tie_rule"] == ""
    assert "tied" not in rec["verdict"]


def test_without_intervals_the_highest_value_wins_beyond_the_margin() -> None:
    # Studies stored before intervals: a value without one counts as exact.
    trials = [
        make_trial(0, 64, loss=1.0, throughput=100.0),
        make_trial(1, 128, loss=1.0, throughput=110.0),
    ]
    rec = run_recommend(trials)
    assert rec["trial_number"] == 1 and rec["tied_with"] == [] and rec["close_calls"] == []
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
    assert chosen.number == decision.chosen == 0 and decision.tied_with == [1]  # 1 % apart
    chosen, decision = choose([trials[0], trials[1]], "loss-then-throughput", margin=0.0)
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
