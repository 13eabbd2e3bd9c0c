"""Why a search ended with nothing to recommend: every trial diverged (the likeliest causes), or
how each trial ended — never "run `tuner search` first", which is the command just run."""

from __future__ import annotations

from optuna.trial import TrialState
from trials import make_trial

from tuner.cli.errors import exit_code
from tuner.core.errors import AllDivergedError, NoCompleteTrialError
from tuner.core.trials import all_diverged, nothing_completed


def diverged(number: int, batch: int, lr: float) -> object:
    return make_trial(number, batch, status="diverged", learning_rate=lr, error="loss became nan")


def test_every_trial_diverged_names_the_likeliest_causes() -> None:
    trials = [diverged(0, 64, 1e12), diverged(1, 128, 2e12)]
    error = nothing_completed("big-lr", trials)
    assert isinstance(error, AllDivergedError) and exit_code(error) == 1
    message = str(error)
    assert message.startswith("every trial of study 'big-lr' diverged: 2 trial(s) at learning ")
    assert "rate 1e+12 to 2e+12 ended with a NaN or infinite loss" in message
    assert "learning rate too high" in message and "bad data" in message
    assert "tuner search` first" not in message


def test_out_of_memory_beside_divergence_still_counts_as_all_diverged() -> None:
    trials = [diverged(0, 64, 1e12), make_trial(1, 512, status="oom", error="OOM")]
    assert all_diverged(trials)
    assert "that fit in memory (1 ran out of memory) diverged" in str(
        nothing_completed("s", trials)
    )


def test_other_failures_are_counted_by_status() -> None:
    trials = [diverged(0, 64, 1e12), make_trial(1, 128, status="error", error="boom")]
    assert not all_diverged(trials)
    error = nothing_completed("s", trials)
    assert type(error) is NoCompleteTrialError
    assert str(error).startswith("no trial of study 's' completed (1 diverged, 1 error): ")


def test_nothing_to_say_when_a_trial_completed_or_none_diverged() -> None:
    complete = make_trial(1, 128, loss=0.5, throughput=1000.0)
    assert nothing_completed("s", [diverged(0, 64, 1.0), complete]) is None
    running = make_trial(0, 64, state=TrialState.RUNNING)
    assert not all_diverged([running])
    assert not all_diverged([make_trial(0, 64, status="oom", error="OOM")])
