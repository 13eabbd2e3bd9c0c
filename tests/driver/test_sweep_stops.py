"""The LR sweep's early stops (issue 32): with ``--lr-sweep`` a grid trial is compared with the
best finished trial at its own batch, so a point stopped as dominated is a rate known worse
*there* (what the law's fit needs); without a sweep, with the best of all batches as before. Real
FrozenTrials, the seed record as tuner.driver.decide.seeds stores it."""

from __future__ import annotations

from fake_child import make_spec
from trials import SIGNATURE, make_trial, target_trial

from tuner.driver.decide.early_stop import early_stop_for, peers

NOISE = {SIGNATURE: {"seeds": [0, 1, 2], "final_losses": [0.5, 0.52, 0.49], "spread": 0.03}}
CURVE = [[1024, 0.9], [2048, 0.6], [3072, 0.5]]
TRIALS = [
    make_trial(0, 64, loss=0.2, throughput=1.0, val_curve=CURVE),  # the best of all
    make_trial(1, 256, loss=0.5, throughput=1.0, val_curve=CURVE),
    make_trial(2, 256, loss=0.4, throughput=1.0, val_curve=CURVE),  # the best at 256
]


def test_a_sweep_point_is_compared_with_the_best_at_its_own_batch() -> None:
    spec = make_spec(seeds=3, lr_sweep=5)
    stop, skipped = early_stop_for(spec, SIGNATURE, lambda: NOISE, TRIALS, 256)
    assert skipped is None and stop is not None and stop.reference_trial == 2
    stop, _ = early_stop_for(spec, SIGNATURE, lambda: NOISE, TRIALS, 64)
    assert stop is not None and stop.reference_trial == 0


def test_the_first_trial_at_a_batch_of_a_sweep_has_nothing_to_compare_with() -> None:
    spec = make_spec(seeds=3, lr_sweep=5)
    stop, skipped = early_stop_for(spec, SIGNATURE, lambda: NOISE, TRIALS, 512)
    assert stop is not None and stop.reference_trial is None
    assert skipped == "no early stop: no finished trial with a loss curve to compare with yet"


def test_without_a_sweep_the_best_of_all_batches_is_the_reference() -> None:
    stop, _ = early_stop_for(make_spec(seeds=3), SIGNATURE, lambda: NOISE, TRIALS, 256)
    assert stop is not None and stop.reference_trial == 0
    assert peers(make_spec(seeds=3), TRIALS, 256) == TRIALS


def test_under_a_target_a_sweep_point_races_the_best_time_at_its_batch() -> None:
    spec = make_spec(seeds=1, target_loss=0.3, lr_sweep=3)
    trials = [target_trial(0, 64, times=[2.0]), target_trial(1, 128, times=[9.0])]
    stop, _ = early_stop_for(spec, SIGNATURE, lambda: NOISE, trials, 128)
    assert stop is not None and (stop.best_time_s, stop.best_time_trial) == (9.0, 1)
