"""A child that stopped as dominated ends PRUNED with status ``dominated``, its evidence and the
one line that says why; it is no evidence of running out of memory."""

from __future__ import annotations

from child_results import result_text
from optuna.trial import TrialState
from trials import make_trial, run_recommend

from tuner.core.configurations import smallest_oom_batch
from tuner.core.outcome import ChildRun, classify

EVIDENCE = {"rule": "loss-gap", "samples": 3072, "budget_samples": 8192, "samples_saved": 5120}


def test_a_dominated_child_is_pruned_with_its_evidence() -> None:
    text = result_text(
        {
            "status": "dominated",
            "error": "dominated: at 3072 of 8192 samples loss 1.2 vs 0.6 (#4), 100% worse",
            "final_loss": 1.2,
            "throughput": 900.0,
            "val_curve": [[1024, 2.0], [2048, 1.6], [3072, 1.2]],
            "dominance": EVIDENCE,
        }
    )
    outcome = classify(ChildRun(0, text, wall_s=3.0), memory_capped=False)
    assert (outcome.status, outcome.state, outcome.values) == ("dominated", "PRUNED", None)
    assert outcome.error is not None and outcome.error.startswith("dominated: at 3072 of 8192")
    assert outcome.attrs["dominance"] == EVIDENCE
    assert outcome.attrs["val_curve"][-1] == [3072, 1.2]


def test_a_dominated_trial_is_no_evidence_of_running_out_of_memory() -> None:
    trials = [make_trial(0, 512, status="dominated", state=TrialState.PRUNED, dominance=EVIDENCE)]
    assert smallest_oom_batch(trials, "2x cpu", "", "float32") is None


def test_the_recommendation_never_picks_a_dominated_trial() -> None:
    trials = [
        make_trial(0, 64, loss=0.5, throughput=1000.0),
        make_trial(1, 256, status="dominated", state=TrialState.PRUNED, dominance=EVIDENCE),
    ]
    assert run_recommend(trials)["global_batch_size"] == 64
