"""A trial of two windows (the zoo's specs and Keras's examples with ``epochs = 2``) evaluates
its validation loss after each, but the loss-gap test looks only between the first check and
the last, so it can never stop it: the trial says so in ``early_stop_skipped`` instead of
storing a curve and nothing else (every zoo search with --seeds 2 did, silently)."""

from __future__ import annotations

from tuner.core.outcome import _RESULT_ATTRS
from tuner.core.protocol import EarlyStop
from tuner.core.target import CheckPlan
from tuner.worker.target import TargetCheck

STOP = EarlyStop(
    alpha=0.05,
    band=0.02,
    noise_sd=0.01,
    noise_runs=2,
    reference_trial=0,
    reference_samples=(512, 1024),
    reference_losses=(1.0, 0.9),
)


def _fields(windows: int, stop: EarlyStop | None = STOP) -> dict[str, object]:
    check = TargetCheck(CheckPlan(512, 8, windows), None, lambda: 5.0, stop, [])
    for _ in range(windows):
        check()
    return check.fields([1.0] * windows)


def test_two_windows_are_never_judged_and_the_trial_says_why() -> None:
    fields = _fields(2)
    assert fields["val_curve"] == [[512, 5.0], [1024, 5.0]]
    assert str(fields["early_stop_skipped"]).startswith("no early stop: 2 validation checks")
    assert "--epochs 3" in str(fields["early_stop_skipped"])
    assert "early_stop_skipped" in _RESULT_ATTRS  # stored on the trial


def test_three_windows_are_judged_and_no_reason_is_given() -> None:
    assert "early_stop_skipped" not in _fields(3)


def test_no_reason_where_no_rule_was_asked_for() -> None:
    assert "early_stop_skipped" not in _fields(2, None)
    unmeasured = EarlyStop(alpha=0.05)  # the driver already says why (seed noise unknown)
    assert "early_stop_skipped" not in _fields(2, unmeasured)
