"""The check after each window stops a dominated trial (tuner.worker.target.TargetCheck) — pure
logic: the evaluation is a list of losses, the windows' seconds a list."""

from __future__ import annotations

from tuner.core.protocol import EarlyStop
from tuner.core.target import CheckPlan
from tuner.worker.target import TargetCheck

PLAN = CheckPlan(cadence=1024, window_steps=16, windows=8)  # looks at checks 2, 4 and 6
REFERENCE = EarlyStop(
    alpha=0.05,
    band=0.02,
    noise_sd=0.01,
    noise_runs=3,
    reference_trial=4,
    reference_samples=tuple(1024 * k for k in range(1, 9)),
    reference_losses=(1.0, 0.8, 0.6, 0.5, 0.45, 0.42, 0.4, 0.39),
)


def _run(check: TargetCheck, seconds: list[float], window_s: float = 1.0) -> int:
    """Call ``check`` after each window until it stops; the checks it took."""
    for _ in range(PLAN.windows):
        seconds.append(window_s)
        if not check():
            break
    return len(check.curve)


def test_a_trial_twice_as_bad_stops_at_the_first_look_with_its_evidence() -> None:
    losses = iter([2 * x for x in REFERENCE.reference_losses])
    seconds: list[float] = []
    check = TargetCheck(PLAN, None, lambda: next(losses), REFERENCE, seconds)
    assert _run(check, seconds) == 3  # checks 0 and 1 are no looks
    fields = check.fields(seconds)
    evidence = fields["dominance"]
    assert evidence["rule"] == "loss-gap" and evidence["reference_trial"] == 4
    assert evidence["samples"] == 3072 and evidence["samples_saved"] == 8192 - 3072
    assert evidence["loss"] == 1.2 and evidence["reference_loss"] == 0.6
    assert fields["val_curve"][-1] == [3072, 1.2]
    assert "target_loss" not in fields


def test_an_equal_trial_runs_to_its_end_and_records_its_curve() -> None:
    losses = iter(REFERENCE.reference_losses)
    seconds: list[float] = []
    check = TargetCheck(PLAN, None, lambda: next(losses), REFERENCE, seconds)
    assert _run(check, seconds) == 8 and check.dominance is None
    assert [s for s, _ in check.fields(seconds)["val_curve"]] == list(REFERENCE.reference_samples)


def test_under_a_target_a_trial_past_the_best_time_stops() -> None:
    stop = EarlyStop(alpha=0.05, best_time_s=3.0, best_time_trial=2, tie_margin=0.05)
    seconds: list[float] = []
    check = TargetCheck(PLAN, 0.1, lambda: 0.5, stop, seconds)
    # After 3 steady windows of 1 s the earliest it could reach 0.1 is 4 s > 3 s x 1.05.
    assert _run(check, seconds) == 3
    evidence = check.fields(seconds)["dominance"]
    assert evidence["rule"] == "time-to-target" and evidence["best_time_s"] == 3.0
    assert evidence["earliest_s"] == 4.0 and evidence["reference_trial"] == 2


def test_reaching_the_target_wins_over_the_time_rule() -> None:
    stop = EarlyStop(alpha=0.05, best_time_s=0.5, tie_margin=0.0)
    seconds: list[float] = []
    losses = iter([0.5, 0.05, 0.04])
    check = TargetCheck(PLAN, 0.1, lambda: next(losses), stop, seconds)
    assert _run(check, seconds) == 2  # reached at the second check: one timing window is enough
    assert check.dominance is None and check.fields(seconds)["reached_target"] is True
