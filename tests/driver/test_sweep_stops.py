"""The LR sweep's early stops (issue 32): with ``--lr-sweep`` a grid trial is compared with the
best finished trial at its own batch, so a point stopped as dominated is a rate known worse
*there* (what the law's fit needs); without a sweep, with the best of all batches as before. Real
FrozenTrials, the seed record as tuner.driver.seeds stores it."""

from __future__ import annotations

import math

import pytest
from fake_child import make_spec
from trials import SIGNATURE, make_trial, target_trial

from tuner.driver.early_stop import early_stop_for, peers

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


def _pair(base_final: float, ratio: float) -> dict[str, object]:
    other = [[s, loss * ratio] for s, loss in CURVE[:-1]] + [[3072, base_final * ratio]]
    return {"base": [*CURVE[:-1], [3072, base_final]], "other": other}


BASE = {"global_batch_size": 64}  # what tuner stores on every trial (the pair reads it)
PAIRED = {
    SIGNATURE: {
        **NOISE[SIGNATURE],
        "global_batch_size": 64,
        "lr_rule": "none",
        "curves": [CURVE, CURVE],
        "paired": {
            "lr_rule": "sweep-1/5",
            "learning_rate": 5e-4,
            "runs": [_pair(0.52, 1.10), _pair(0.49, 1.12)],
        },
    }
}


def test_a_sweep_point_is_tested_with_the_paired_noise_of_its_rates() -> None:
    """The seed runs at a second rate give the sd of the log loss ratio over seeds (2 pairs, then
    the grid's own pair at the spec's seed once both of its runs have a curve), far below the
    seed spread the unpaired test would need √2 × of."""
    spec = make_spec(seeds=3, lr_sweep=5)
    stop, _ = early_stop_for(spec, SIGNATURE, lambda: PAIRED, TRIALS, 256)
    assert stop is not None and stop.paired and stop.noise_runs == 2
    assert stop.noise_sd == pytest.approx(abs(math.log(1.12 / 1.10)) / math.sqrt(2))
    assert stop.band == pytest.approx(0.06)  # the band still the seed spread's
    grid_pair = [
        make_trial(3, 64, loss=0.5, throughput=1.0, val_curve=CURVE, **BASE),  # the base rate
        make_trial(4, 64, loss=0.56, throughput=1.0, **BASE, learning_rate=5e-4,
                   val_curve=[[s, loss * 1.14] for s, loss in CURVE]),
    ]  # fmt: skip
    stop, _ = early_stop_for(spec, SIGNATURE, lambda: PAIRED, [*TRIALS, *grid_pair], 256)
    assert stop is not None and stop.paired and stop.noise_runs == 3


def test_without_paired_runs_or_a_sweep_the_seed_noise_applies() -> None:
    spec = make_spec(seeds=3, lr_sweep=5)
    stop, _ = early_stop_for(spec, SIGNATURE, lambda: NOISE, TRIALS, 256)
    assert stop is not None and not stop.paired and stop.noise_sd == 0.03
    one = {SIGNATURE: {**PAIRED[SIGNATURE], "paired": {"runs": [_pair(0.5, 1.1)]}}}
    stop, _ = early_stop_for(spec, SIGNATURE, lambda: one, TRIALS, 256)  # one pair: no sd
    assert stop is not None and not stop.paired
    stop, _ = early_stop_for(make_spec(seeds=3), SIGNATURE, lambda: PAIRED, TRIALS, 256)
    assert stop is not None and not stop.paired
