"""What a grid trial's request carries to stop early (tuner.driver.decide.early_stop), from what is
known when it starts: real FrozenTrials, the seed record as tuner.driver.decide.seeds stores it."""

from __future__ import annotations

import math

import pytest
from fake_child import make_spec
from trials import SIGNATURE, make_trial, target_trial

from tuner.driver.decide.early_stop import best_reference, early_stop_for, records_curves

NOISE = {SIGNATURE: {"seeds": [0, 1, 2], "final_losses": [0.5, 0.52, 0.49], "spread": 0.03}}
CURVE = [[1024, 0.9], [2048, 0.6], [3072, 0.5]]


def _noise(records=NOISE):
    return lambda: records


def test_a_trial_with_noise_and_a_finished_reference_carries_both() -> None:
    spec = make_spec(seeds=3, tolerance=0.02)
    trials = [
        make_trial(0, 64, loss=0.5, throughput=1.0, val_curve=CURVE),
        make_trial(1, 128, loss=0.4, throughput=1.0, val_curve=[[1024, 0.8], [3072, 0.4]]),
        make_trial(2, 256, loss=0.3, throughput=1.0),  # no curve: not a reference
        make_trial(3, 512, status="dominated", val_curve=[[1024, 0.1]]),  # not finished ok
    ]
    stop, skipped = early_stop_for(spec, SIGNATURE, _noise(), trials)
    assert skipped is None and stop is not None
    assert stop.reference_trial == 1
    assert stop.reference_samples == (1024, 3072) and stop.reference_losses == (0.8, 0.4)
    assert stop.noise_sd == 0.03 and stop.noise_runs == 3
    assert stop.band == pytest.approx(0.06)  # 2 x the seed spread beats --tolerance 0.02
    assert stop.alpha == 0.05


def test_without_the_seed_noise_nothing_stops_and_the_trial_says_why() -> None:
    spec = make_spec(seeds=3)
    trials = [make_trial(0, 64, loss=0.5, throughput=1.0, val_curve=CURVE)]
    stop, skipped = early_stop_for(spec, SIGNATURE, _noise({}), trials)
    assert stop is not None and stop.reference_trial is None and stop.noise_sd is None
    assert skipped == "no early stop: the seed noise is not measured yet"
    stop, skipped = early_stop_for(spec, SIGNATURE, _noise(), [])
    assert skipped == "no early stop: no finished trial with a loss curve to compare with yet"


def test_no_curves_and_no_checks_where_no_rule_can_ever_apply() -> None:
    assert not records_curves(make_spec(seeds=1))
    stop, skipped = early_stop_for(make_spec(seeds=1), SIGNATURE, _noise(), [])
    assert stop is None and skipped is not None and "seeds = 1" in skipped
    off = make_spec(seeds=3, early_stop=False)
    assert early_stop_for(off, SIGNATURE, _noise(), []) == (None, None)


def test_under_a_target_the_best_time_so_far() -> None:
    spec = make_spec(seeds=1, target_loss=0.3, tie_margin=0.05)
    assert records_curves(spec)
    trials = [
        target_trial(0, 64, times=[12.0]),
        target_trial(1, 128, times=[9.0]),
        target_trial(2, 256, times=None),
    ]
    stop, skipped = early_stop_for(spec, SIGNATURE, lambda: pytest.fail("not read"), trials)
    assert skipped is None and stop is not None
    assert (stop.best_time_s, stop.best_time_trial, stop.tie_margin) == (9.0, 1, 0.05)
    _, skipped = early_stop_for(spec, SIGNATURE, _noise(), trials[2:])
    assert skipped == "no early stop: no trial has reached the target yet"


def test_the_reference_is_the_lowest_final_loss_with_a_usable_curve() -> None:
    bad_curve = [[1024, math.nan]]
    trials = [
        make_trial(0, 64, loss=0.2, throughput=1.0, val_curve=bad_curve),
        make_trial(1, 128, loss=0.3, throughput=1.0, target_curve=CURVE),
        make_trial(2, 64, loss=0.1, throughput=1.0, val_curve=CURVE, same_as=1),
    ]
    reference = best_reference(trials)
    assert reference is not None and reference.number == 1


def test_the_noise_per_check_comes_from_the_base_trial_and_the_seed_runs() -> None:
    spec = make_spec(seeds=3)
    curve = [[1024, 1.0], [2048, 0.5]]
    base = make_trial(
        0, 64, loss=0.5, throughput=1.0, val_curve=curve, global_batch_size=64, lr_rule="none"
    )
    record = {**NOISE[SIGNATURE], "global_batch_size": 64, "lr_rule": "none"}
    record["curves"] = [[[1024, 2.0], [2048, 0.5]], [[1024, 1.0], [2048, 0.5]]]
    stop, _ = early_stop_for(spec, SIGNATURE, _noise({SIGNATURE: record}), [base])
    assert stop is not None and stop.noise_samples == (1024, 2048)
    assert stop.noise_sds[0] == pytest.approx(math.log(2) / math.sqrt(3))


TARGET_NOISE = {
    SIGNATURE: {
        "seeds": [0, 1, 2],
        "global_batch_size": 64,
        "lr_rule": "none",
        "target_loss": 0.3,
        "curves": [[[1024, 1.1], [2048, 0.33]], [[1024, 0.9], [2048, 0.31]]],
    }
}


def test_under_a_target_both_rules_apply_the_gap_at_equal_training_time() -> None:
    spec = make_spec(seeds=3, target_loss=0.3, tie_margin=0.05)
    base = target_trial(
        0,
        64,
        times=[4.0],
        throughput=1000.0,
        target_curve=[[1024, 1.0], [2048, 0.32]],
        global_batch_size=64,
    )
    best = target_trial(
        1,
        128,
        times=[2.0],
        throughput=2000.0,
        target_curve=[[1024, 0.8], [2048, 0.29]],
        global_batch_size=128,
    )
    slow = target_trial(
        2, 256, times=None, throughput=2500.0, target_curve=[[1024, 0.9]], global_batch_size=256
    )
    stop, skipped = early_stop_for(spec, SIGNATURE, _noise(TARGET_NOISE), [base, best, slow], 256)
    assert skipped is None and stop is not None
    assert (stop.best_time_s, stop.best_time_trial) == (2.0, 1)  # the time rule
    assert stop.reference_trial == 1  # the best time's curve, for the loss-gap test
    # Batch 256 trains 2500/2000 the samples of #1 in the same time, x 1.05 in its favour.
    assert stop.reference_samples == (round(1024 * 1.3125), round(2048 * 1.3125))
    assert stop.reference_losses == (0.8, 0.29)
    assert stop.noise_runs == 3 and stop.noise_samples == (1024, 2048)
    assert stop.noise_sd == pytest.approx(stop.noise_sds[-1]) and stop.noise_sd > 0
    # The same batch as the reference: the same steps, the same time (x the tie margin).
    stop, _ = early_stop_for(spec, SIGNATURE, _noise(TARGET_NOISE), [base, best], 128)
    assert stop is not None and stop.reference_samples == (1075, 2150)


def test_under_a_target_no_gap_test_without_a_throughput_at_the_trials_batch() -> None:
    spec = make_spec(seeds=3, target_loss=0.3)
    best = target_trial(
        1, 128, times=[2.0], target_curve=[[1024, 0.8], [2048, 0.29]], global_batch_size=128
    )
    stop, skipped = early_stop_for(spec, SIGNATURE, _noise(TARGET_NOISE), [best], 512)
    assert stop is not None and stop.reference_trial is None and stop.best_time_s == 2.0
    assert skipped is None  # the time rule still applies
    stop, skipped = early_stop_for(spec, SIGNATURE, _noise({}), [], 512)
    assert stop is not None and skipped == (
        "no early stop: no trial has reached the target yet; the seed noise is not measured yet"
    )
    off = make_spec(seeds=3, target_loss=0.3, early_stop=False)
    assert early_stop_for(off, SIGNATURE, _noise(TARGET_NOISE), [best], 128) == (None, None)
