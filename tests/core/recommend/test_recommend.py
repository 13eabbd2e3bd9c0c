"""Unit tests of the recommendation policy over hand-made Optuna ``FrozenTrial`` objects."""

from __future__ import annotations

import json

import pytest
from optuna.trial import FrozenTrial, TrialState, create_trial
from trials import (
    DISTRIBUTIONS,
    REPLICAS,
    SIGNATURE,
    make_trial,
    measured_trial,
    run_recommend,
    target_trial,
)

from tuner.core.configurations import (
    grid_point,
    infeasible_batch_sizes,
    smallest_oom_batch,
    status_of,
    unique_trials,
)
from tuner.core.errors import ConfigError, NoCompleteTrialError
from tuner.core.recommend import DEFAULT_TOLERANCE, POLICIES, POLICY, default_policy

# --- the policy --------------------------------------------------------------------------------


def test_highest_throughput_within_tolerance_wins() -> None:
    trials = [
        make_trial(0, 64, "none", loss=1.000, throughput=100.0),
        make_trial(1, 128, "sqrt", loss=1.015, throughput=300.0),
        make_trial(2, 256, "linear", loss=1.050, throughput=1000.0),
    ]
    rec = run_recommend(trials)
    assert rec["trial_number"] == 1
    assert rec["global_batch_size"] == 128
    assert rec["lr_rule"] == "sqrt"
    assert rec["throughput"] == 300.0
    assert rec["final_loss"] == 1.015
    assert rec["candidates"] == [0, 1]
    assert rec["per_replica_batch_size"] == 64
    assert rec["num_replicas"] == REPLICAS
    assert rec["learning_rate"] == pytest.approx(2e-3)
    assert rec["train_loss"] == pytest.approx(1.015 * 0.9)
    assert rec["devices"] == ["/cpu:0", "/cpu:1"]
    assert rec["device_signature"] == SIGNATURE
    assert rec["policy"] == POLICY == "loss-then-throughput"
    assert rec["loss_tolerance"] == DEFAULT_TOLERANCE == 0.02
    assert rec["study_name"] == "unit"
    assert rec["base_lr"] == 1e-3
    assert rec["base_batch_size"] == 64
    assert rec["versions"] == {"tuner": "0.1.0", "optuna": "x"}
    assert rec["created_at"] == "2024-01-01T00:00:00Z"
    assert "note" not in rec
    json.dumps(rec)  # the result is plain JSON data


def test_faster_trial_outside_tolerance_loses() -> None:
    trials = [
        make_trial(0, 64, loss=1.000, throughput=100.0),
        make_trial(1, 512, loss=1.021, throughput=10_000.0),
    ]
    rec = run_recommend(trials)
    assert rec["trial_number"] == 0
    assert rec["candidates"] == [0]


def test_wider_tolerance_admits_the_faster_trial() -> None:
    trials = [
        make_trial(0, 64, loss=1.000, throughput=100.0),
        make_trial(1, 512, loss=1.021, throughput=10_000.0),
    ]
    rec = run_recommend(trials, tolerance=0.05)
    assert rec["trial_number"] == 1
    assert rec["candidates"] == [0, 1]
    assert rec["loss_tolerance"] == 0.05


def test_zero_tolerance_keeps_only_the_best_loss() -> None:
    trials = [
        make_trial(0, 64, loss=0.5, throughput=100.0),
        make_trial(1, 128, loss=0.5000001, throughput=200.0),
    ]
    assert run_recommend(trials, tolerance=0.0)["trial_number"] == 0


def test_tolerance_is_relative_to_the_magnitude_of_a_negative_loss() -> None:
    trials = [
        make_trial(0, 64, loss=-1.00, throughput=100.0),
        make_trial(1, 128, loss=-0.99, throughput=200.0),  # within 2 % of |-1|
        make_trial(2, 256, loss=-0.97, throughput=300.0),  # 3 % worse
    ]
    rec = run_recommend(trials)
    assert rec["candidates"] == [0, 1]
    assert rec["trial_number"] == 1


def test_ties_go_to_the_smaller_batch() -> None:
    trials = [
        make_trial(0, 256, "linear", loss=1.0, throughput=500.0),
        make_trial(1, 64, "none", loss=1.0, throughput=500.0),
        make_trial(2, 128, "sqrt", loss=1.0, throughput=500.0),
    ]
    rec = run_recommend(trials)
    assert rec["global_batch_size"] == 64
    assert rec["trial_number"] == 1


def test_failed_and_pruned_trials_are_not_candidates() -> None:
    trials = [
        make_trial(0, 64, loss=1.0, throughput=100.0),
        make_trial(1, 128, "none", status="diverged"),
        make_trial(2, 128, "sqrt", status="error"),
        make_trial(3, 256, "none", state=TrialState.RUNNING),
    ]
    rec = run_recommend(trials)
    assert rec["trial_number"] == 0
    assert rec["candidates"] == [0]


# --- duplicates --------------------------------------------------------------------------------


def test_duplicates_of_a_grid_point_count_once() -> None:
    trials = [
        make_trial(0, 64, "none", loss=1.0, throughput=100.0),
        make_trial(3, 128, "sqrt", loss=1.0, throughput=200.0),
        make_trial(7, 128, "sqrt", loss=1.0, throughput=900.0),  # duplicate: ignored
    ]
    rec = run_recommend(trials)
    assert rec["trial_number"] == 3
    assert rec["throughput"] == 200.0
    assert rec["candidates"] == [0, 3]


def test_unique_trials_prefers_the_first_complete() -> None:
    trials = [
        make_trial(5, 128, "sqrt", status="error"),
        make_trial(4, 128, "sqrt", loss=1.0, throughput=2.0),
        make_trial(2, 128, "sqrt", loss=1.0, throughput=1.0),
        make_trial(1, 64, "none", loss=1.0, throughput=1.0),
    ]
    unique = unique_trials(trials)
    assert [t.number for t in unique] == [1, 2]


def test_unique_trials_prefers_the_latest_finished_then_any() -> None:
    failed = [
        make_trial(1, 64, "none", status="error"),
        make_trial(6, 64, "none", status="timeout"),
        make_trial(8, 64, "none", state=TrialState.RUNNING),
    ]
    assert [t.number for t in unique_trials(failed)] == [6]
    running = [
        make_trial(2, 128, "none", state=TrialState.RUNNING),
        make_trial(9, 128, "none", state=TrialState.RUNNING),
    ]
    assert [t.number for t in unique_trials(running)] == [9]


def test_unique_trials_keys_on_batch_and_rule() -> None:
    trials = [
        make_trial(0, 64, "none", loss=1.0, throughput=1.0),
        make_trial(1, 64, "sqrt", loss=1.0, throughput=1.0),
        make_trial(2, 128, "none", loss=1.0, throughput=1.0),
    ]
    assert [t.number for t in unique_trials(trials)] == [0, 1, 2]
    assert grid_point(trials[1]) == (64, "sqrt")


# --- out of memory -----------------------------------------------------------------------------


def oom_study() -> list[FrozenTrial]:
    return [
        make_trial(0, 64, "none", loss=1.00, throughput=100.0),
        make_trial(1, 128, "none", loss=1.01, throughput=180.0),
        make_trial(2, 256, "none", status="oom"),
        make_trial(3, 512, "none", status="oom-implied"),
        make_trial(4, 256, "sqrt", status="oom"),
    ]


def test_oom_sizes_and_largest_feasible_batch() -> None:
    rec = run_recommend(oom_study())
    assert rec["oom_batch_sizes"] == [256, 512]
    assert rec["largest_feasible_batch_size"] == 128
    assert rec["global_batch_size"] == 128


def test_note_when_larger_sizes_ran_out_of_memory() -> None:
    rec = run_recommend(oom_study())
    assert rec["note"] == (
        "global batch 256 and larger ran out of memory; the largest that fits is "
        "128 (64 per replica)"
    )


def test_largest_feasible_is_largest_complete_even_if_not_chosen() -> None:
    trials = [
        make_trial(0, 64, loss=1.0, throughput=100.0),
        make_trial(1, 256, loss=2.0, throughput=900.0),  # fits, but loss too high
        make_trial(2, 512, status="oom"),
    ]
    rec = run_recommend(trials)
    assert rec["global_batch_size"] == 64
    assert rec["largest_feasible_batch_size"] == 256
    assert "256 (128 per replica)" in rec["note"]


def test_no_note_without_oom() -> None:
    trials = [
        make_trial(0, 64, loss=1.0, throughput=100.0),
        make_trial(1, 128, status="diverged"),
    ]
    rec = run_recommend(trials)
    assert rec["oom_batch_sizes"] == []
    assert rec["largest_feasible_batch_size"] == 64
    assert "note" not in rec


def test_no_note_when_the_largest_batch_fits() -> None:
    # A flaky OOM at a smaller batch while the largest batch completed: no claim that
    # "128 and larger ran out of memory".
    trials = [
        make_trial(0, 128, "none", status="oom"),
        make_trial(1, 256, "none", loss=1.0, throughput=100.0),
    ]
    rec = run_recommend(trials)
    assert rec["oom_batch_sizes"] == [128]
    assert rec["largest_feasible_batch_size"] == 256
    assert "note" not in rec


def test_infeasible_batch_sizes() -> None:
    assert infeasible_batch_sizes(oom_study()) == [256, 512]
    assert infeasible_batch_sizes([make_trial(0, 64, status="diverged")]) == []


def test_smallest_oom_batch_filters_by_signature() -> None:
    trials = [
        make_trial(0, 512, status="oom", device_signature="2x A"),
        make_trial(1, 256, status="oom", device_signature="2x A"),
        make_trial(2, 128, status="oom", device_signature="2x B"),
        make_trial(3, 64, status="oom-implied", device_signature="2x A"),
        make_trial(4, 64, loss=1.0, throughput=1.0, device_signature="2x A"),
    ]
    assert smallest_oom_batch(trials) == 128
    assert smallest_oom_batch(trials, "2x A") == 256
    assert smallest_oom_batch(trials, "2x B") == 128
    assert smallest_oom_batch(trials, "2x C") is None
    assert smallest_oom_batch([]) is None


# --- nothing to recommend ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "trials",
    [
        [],
        [make_trial(0, 64, status="oom"), make_trial(1, 128, status="oom-implied")],
        [make_trial(0, 64, status="error"), make_trial(1, 64, "sqrt", state=TrialState.RUNNING)],
    ],
)
def test_no_complete_trial(trials: list[FrozenTrial]) -> None:
    with pytest.raises(NoCompleteTrialError, match="'unit' has no COMPLETE trial"):
        run_recommend(trials)


# --- status -----------------------------------------------------------------------------------


def test_status_of() -> None:
    assert status_of(make_trial(0, 64, loss=1.0, throughput=1.0)) == "ok"
    assert status_of(make_trial(1, 64, status="oom")) == "oom"
    assert status_of(make_trial(2, 64, state=TrialState.RUNNING)) == "running"
    bare = create_trial(
        state=TrialState.FAIL,
        params={"global_batch_size": 64, "lr_rule": "none"},
        distributions=DISTRIBUTIONS,
    )
    assert status_of(bare) == "unknown"


def test_a_trial_killed_before_its_parameters_is_ignored():
    import optuna as _optuna

    study = _optuna.create_study(directions=["minimize", "maximize"])
    study.ask()  # RUNNING, no parameters: a worker killed right after creating it
    assert unique_trials(study.get_trials()) == []


def test_throughput_is_never_compared_across_device_signatures():
    fast_gpu = "2x NVIDIA H100"
    trials = [
        # Two trials on the 2x cpu signature (the default), one on much faster GPUs.
        make_trial(0, 64, "none", loss=0.50, throughput=1000.0),
        make_trial(1, 128, "none", loss=0.50, throughput=1500.0, status="ok"),
        make_trial(2, 64, "none", loss=0.50, throughput=90000.0, device_signature=fast_gpu),
        make_trial(3, 128, "none", status="oom", device_signature=fast_gpu),
    ]
    rec = run_recommend(trials)
    # The top level is the signature with the most completed trials, on its own trials only.
    assert rec["device_signature"] == SIGNATURE
    assert (rec["trial_number"], rec["throughput"]) == (1, 1500.0)
    assert rec["oom_batch_sizes"] == []  # the GPU's out-of-memory says nothing about the CPU
    per = rec["per_device_signature"]
    assert set(per) == {SIGNATURE, fast_gpu}
    assert per[fast_gpu]["trial_number"] == 2 and per[fast_gpu]["oom_batch_sizes"] == [128]
    assert "2 device signatures" in rec["note"] and "not comparable" in rec["note"]
    # The same grid point on two signatures is two results, not a duplicate.
    assert (
        per[fast_gpu]["global_batch_size"] == 64
        and per[SIGNATURE]["largest_feasible_batch_size"] == 128
    )


def test_one_signature_has_no_comparison_note():
    rec = run_recommend([make_trial(0, 64, "none", loss=0.5, throughput=10.0)])
    assert list(rec["per_device_signature"]) == [SIGNATURE]
    assert "note" not in rec


def test_a_joint_search_reports_feasibility_of_the_chosen_model_only():
    wide, narrow = {"width": 8192}, {"width": 256}
    space = {
        "kind": "function",
        "reference": "m:build",
        "space": [
            {
                "class_name": "Choice",
                "config": {
                    "name": "width",
                    "values": [8192, 256],
                    "default": 8192,
                    "conditions": [],
                },
            }
        ],
    }
    trials = [
        make_trial(0, 256, loss=0.5, throughput=100.0, model_hyperparameters=wide),
        make_trial(1, 512, status="oom", model_hyperparameters=wide),
        make_trial(2, 512, loss=0.5, throughput=300.0, model_hyperparameters=narrow),
    ]
    rec = run_recommend(trials, hypermodel=space, baselines={SIGNATURE: {"throughput": 50.0}})
    assert rec["trial_number"] == 2 and rec["model_hyperparameters"] == narrow
    assert rec["oom_batch_sizes"] == [] and rec["largest_feasible_batch_size"] == 512
    assert "note" not in rec  # the wide model's out-of-memory says nothing about the narrow one
    assert rec["speedup_vs_single_device"] is None  # the baseline trained the defaults (wide)
    assert "hp.Fixed('width', 256)" in rec["keras_tuner_snippet"]


# --- representatives, policies, tolerance (issue 17) ---------------------------------------------


def test_the_representative_is_the_run_with_the_most_repeats() -> None:
    trials = [
        measured_trial(0, 64, runs=[1000.0]),
        measured_trial(4, 64, runs=[1000.0, 1100.0, 1050.0], repeat_of=0, repeat_index=3),
        measured_trial(3, 64, runs=[1000.0, 1100.0], repeat_of=0, repeat_index=2),
        make_trial(5, 64, status="crashed", repeat_of=0),
        measured_trial(1, 128, runs=[900.0]),
        measured_trial(2, 128, runs=[950.0]),  # a duplicate with as many runs: the lower number
    ]
    assert [t.number for t in unique_trials(trials)] == [1, 4]
    rec = run_recommend(trials)
    assert rec["trial_number"] == 4 and rec["runs"] == 3 and rec["throughput"] == 1050.0
    assert rec["candidates"] == [1, 4]


def test_a_same_as_trial_keeps_its_row_but_is_never_picked() -> None:
    trials = [
        make_trial(0, 64, "none", loss=1.0, throughput=100.0),
        make_trial(1, 64, "sqrt", loss=1.0, throughput=100.0, same_as=0),
    ]
    assert [t.number for t in unique_trials(trials)] == [0, 1]  # the table shows both points
    rec = run_recommend(trials)
    assert rec["trial_number"] == 0 and rec["candidates"] == [0] and rec["tied_with"] == []


def test_the_default_policy_follows_the_target() -> None:
    assert POLICIES == ("loss-then-throughput", "goodput", "time-to-target")
    assert default_policy(None) == "loss-then-throughput"
    assert default_policy(0.01) == "time-to-target"
    trials = [
        target_trial(0, 64, times=[20.0], samples=4096, throughput=100.0),
        target_trial(1, 128, times=[10.0], samples=8192, throughput=90.0),
        target_trial(2, 256, times=None, throughput=5000.0),  # fastest, never reached it
    ]
    assert run_recommend(trials)["trial_number"] == 2  # no target: throughput
    rec = run_recommend(trials, target_loss=0.1)
    assert (rec["policy"], rec["trial_number"], rec["candidates"]) == ("time-to-target", 1, [0, 1])
    assert rec["time_to_target_s"] == 10.0 and rec["samples_to_target"] == 8192
    explicit = run_recommend(trials, target_loss=0.1, policy="loss-then-throughput")
    assert explicit["trial_number"] == 2 and explicit["reached_target"] is False


def test_time_to_target_when_no_trial_reached_it() -> None:
    trials = [
        target_trial(0, 64, times=None, loss=0.5, target_curve=[[4096, 0.9], [8192, 0.31]]),
        target_trial(1, 128, times=None, loss=0.4),
    ]
    with pytest.raises(NoCompleteTrialError) as caught:
        run_recommend(trials, target_loss=0.1)
    message = str(caught.value)
    assert "no trial of study 'unit' reached the target loss 0.1" in message
    assert "best validation loss seen: 0.31" in message
    assert "--target-loss" in message and "--policy loss-then-throughput" in message


def test_time_to_target_needs_a_target_and_a_policy_must_exist() -> None:
    trials = [make_trial(0, 64, loss=1.0, throughput=1.0)]
    with pytest.raises(ConfigError, match="needs a target loss"):
        run_recommend(trials, policy="time-to-target")
    with pytest.raises(ConfigError, match="unknown policy 'fastest'"):
        run_recommend(trials, policy="fastest")


def test_the_seed_noise_raises_the_tolerance_and_says_so() -> None:
    trials = [
        make_trial(0, 64, loss=1.00, throughput=100.0),
        make_trial(1, 128, loss=1.10, throughput=200.0),  # 10 % worse: within 2 × 8 % seed noise
    ]
    seeds = {SIGNATURE: {"seeds": [1, 2, 3], "final_losses": [1.0, 1.1, 0.95], "spread": 0.08}}
    rec = run_recommend(trials, seed_noise=seeds)
    assert rec["trial_number"] == 1
    assert rec["loss_tolerance"] == pytest.approx(0.16)
    assert rec["loss_tolerance_source"] == "seed noise"
    assert rec["seed_loss_spread"] == 0.08 and rec["seed_final_losses"] == [1.0, 1.1, 0.95]
    quiet = run_recommend(trials, seed_noise={SIGNATURE: {"final_losses": [1.0, 1.001]}})
    assert quiet["trial_number"] == 0 and quiet["loss_tolerance_source"] == "--tolerance"
    assert quiet["loss_tolerance"] == 0.02 and quiet["seed_loss_spread"] == pytest.approx(
        0.000706753, rel=1e-5
    )
    other = run_recommend(trials, seed_noise={"1x gpu": seeds[SIGNATURE]})
    assert other["seed_loss_spread"] is None and other["loss_tolerance"] == 0.02


def test_a_signature_where_no_trial_reached_the_target_does_not_hide_the_others() -> None:
    trials = [
        target_trial(0, 64, times=None),
        target_trial(1, 128, times=None),
        target_trial(2, 64, times=[5.0], samples=2048, device_signature="1x gpu"),
    ]
    rec = run_recommend(trials, target_loss=0.1)
    assert rec["trial_number"] == 2 and list(rec["per_device_signature"]) == ["1x gpu"]
    with pytest.raises(NoCompleteTrialError, match="reached the target"):
        run_recommend(trials[:2], target_loss=0.1)
