"""Time to a target loss, the pure parts: the cadence of checks (the same samples for every batch
size of the grid), the windows it makes, and the time-to-target arithmetic; and the trial request
that carries them."""

from __future__ import annotations

from typing import Any

import pytest

from tuner.core.devices import DevicePlan
from tuner.core.errors import ConfigError
from tuner.core.spec import spec_from_dict
from tuner.core.target import (
    budget_samples,
    cadence_unit,
    check_cadence,
    default_cadence,
    first_reached,
    plan_checks,
    training_seconds,
)
from tuner.core.windows import warmup_excess
from tuner.driver.children import trial_request


def test_the_default_cadence_is_a_multiple_of_every_batch_about_ten_checks() -> None:
    # lcm(64, 128) = 128; 16,384 / 10 = 1,638.4 -> 13 × 128 = 1,664: 9 checks.
    assert cadence_unit([64, 128]) == 128
    assert default_cadence([64, 128], 16_384) == 1_664
    assert plan_checks(1_664, 64, 16_384).windows == 9
    # 3 epochs of the built-in 65,536 samples, grid 64..512: 19,660.8 -> 38 × 512 = 19,456.
    assert default_cadence([64, 128, 256, 512], 3 * 65_536) == 19_456
    # Batches 96 and 128: lcm 384, not the largest batch.
    cadence = default_cadence([96, 128], 40_000)
    assert cadence == 3_840 and all(cadence % batch == 0 for batch in (96, 128))
    # A budget of few units: one unit per check, never zero.
    assert default_cadence([64, 128], 300) == 128


@pytest.mark.parametrize("batches", [[64, 128], [96, 128, 160], [48, 64, 256]])
def test_every_batch_checks_at_the_same_samples(batches: list[int]) -> None:
    cadence = default_cadence(batches, 50_000)
    points = {tuple(cadence * k for k in range(1, 50_000 // cadence + 1))}
    for batch in batches:
        plan = plan_checks(cadence, batch, 50_000)
        samples = [plan.window_steps * batch * k for k in range(1, plan.windows + 1)]
        points.add(tuple(samples))
    assert len(points) == 1  # one set of check points, whatever the batch
    assert 8 <= len(next(iter(points))) <= 12  # about ten checks


def test_a_budget_too_small_for_two_checks_is_one_clear_line() -> None:
    with pytest.raises(ConfigError, match=r"fewer than 2 checks.*multiple of 384.*96, 128"):
        default_cadence([96, 128], 700)


def test_a_user_cadence_some_batch_does_not_divide_is_refused() -> None:
    check_cadence(1_024, [64, 128, 256])  # divisible by all: accepted
    with pytest.raises(ConfigError) as caught:
        check_cadence(1_000, [64, 128])
    assert str(caught.value) == (
        "--eval-every-samples 1000 is not a multiple of global batch 64: every batch size must "
        "check the loss at the same samples; use a multiple of 128 (the least common multiple "
        "of the grid's batches)"
    )
    with pytest.raises(ConfigError, match=r"^--eval-every-samples 1024 leaves fewer than 2"):
        check_cadence(1_024, [64], budget=2_000)


def test_plan_checks_refuses_what_the_driver_should_have() -> None:
    assert plan_checks(1_664, 64, 16_384).window_steps == 26
    assert plan_checks(1_664, 128, 16_384).windows == 9
    with pytest.raises(ValueError, match="not a multiple of 96"):
        plan_checks(1_664, 96, 16_384)
    with pytest.raises(ValueError, match="leaves 1 checks"):
        plan_checks(10_240, 64, 16_384)


def test_the_budget_is_train_samples_else_epochs_times_the_training_set() -> None:
    assert budget_samples(16_384, None, 4_096) == 16_384
    assert budget_samples(None, 3, 4_096) == 12_288
    assert budget_samples(None, 3, None) is None


def test_the_first_check_at_or_below_the_target_counts() -> None:
    assert first_reached([0.5, 0.31, 0.3, 0.2], 0.3) == 2  # "at" the target counts
    assert first_reached([0.5, float("nan"), 0.4], 0.45) == 2  # NaN never reaches
    assert first_reached([0.5, 0.4], 0.3) is None


def test_time_to_target_is_training_only_without_compilation() -> None:
    # Window 1 took 3.0 s, of which compilation is its excess over a steady window (median 1.0).
    seconds = [3.0, 1.0, 1.2, 0.9]
    assert warmup_excess(seconds) == pytest.approx(2.0)
    assert training_seconds(seconds, 1) == pytest.approx(1.0)  # reached at the first check
    assert training_seconds(seconds, 3) == pytest.approx(3.2)
    assert training_seconds(seconds, 4) == pytest.approx(4.1)
    # A first window faster than the steady ones has no compilation to take away.
    assert warmup_excess([0.5, 1.0, 1.0]) == 0.0
    assert warmup_excess([2.0]) == 0.0


def _spec(**search: object):
    overrides = {f"search.{key}": value for key, value in search.items()}
    return spec_from_dict(None, overrides)


def test_the_trial_request_carries_the_target_its_cadence_and_the_seed() -> None:
    plan = DevicePlan("cpu", 2)
    plain = trial_request(_spec(), plan, 64, 1e-3)
    assert (plain.target, plain.seed) == (None, 0)
    assert trial_request(_spec(), plan, 64, 1e-3, seed=3).seed == 3

    budget = _spec(target_loss=0.3, train_samples=16_384)
    target = trial_request(budget, plan, 128, 1e-3).target
    assert target is not None
    assert (target.loss, target.eval_every_samples) == (0.3, 1_664)
    assert target.cadence_batches == (64, 128)

    def cadence(spec: Any, n_train: int | None = None) -> int | None:
        target = trial_request(spec, plan, 64, 1e-3, n_train=n_train).target
        assert target is not None
        return target.eval_every_samples

    # Epochs over a training set the driver does not know yet: the child picks the cadence
    # from its own n_train, the same function, unless the caller passes n_train.
    epochs = _spec(target_loss=0.3)
    assert cadence(epochs) is None
    assert cadence(epochs, n_train=65_536) == 19_712

    given = _spec(target_loss=0.3, eval_every_samples=2_048)
    assert cadence(given) == 2_048
    with pytest.raises(ConfigError, match=r"^--eval-every-samples 1000 is not a multiple of"):
        trial_request(_spec(target_loss=0.3, eval_every_samples=1_000), plan, 64, 1e-3)
