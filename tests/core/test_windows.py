"""Sample-bounded trials cut into windows (pure)."""

from __future__ import annotations

import pytest

from tuner.core.windows import (
    MIN_TIMED_WINDOWS,
    is_input_bound,
    min_samples,
    plan_windows,
    summarise,
    warmup_excess,
    warmup_windows,
)


@pytest.mark.parametrize("batch", [32, 64, 128, 256, 1000])
def test_every_batch_trains_the_same_samples_up_to_one_batch(batch: int) -> None:
    plan = plan_windows(20_000, batch)
    steps = 20_000 // batch  # the remainder, less than one batch, is not trained
    assert steps - plan.steps < plan.timed_windows + 1  # nor are steps that fill no window
    assert plan.steps == steps or steps % (plan.timed_windows + 1) == min(
        steps % count for count in range(6, 11)
    )
    assert MIN_TIMED_WINDOWS <= plan.timed_windows <= 9
    assert plan.warmup_steps == plan.window_steps


def test_steps_that_fill_no_window_are_as_few_as_possible() -> None:
    plan = plan_windows(157 * 64, 64)  # 157 steps is prime: no count of 6-10 windows divides it
    assert plan.steps == 156 and (plan.timed_windows + 1) == 6
    assert 157 - plan.steps < plan.timed_windows + 1


def test_short_runs_still_get_five_timed_windows_of_one_step() -> None:
    plan = plan_windows(6 * 64, 64)
    assert (plan.warmup_steps, plan.window_steps, plan.timed_windows) == (1, 1, 5)


def test_two_batch_sizes_train_the_same_samples_when_windows_divide() -> None:
    assert plan_windows(16_384, 64).samples == plan_windows(16_384, 128).samples == 16_384


def test_too_few_samples_name_the_numbers() -> None:
    with pytest.raises(ValueError, match="320 samples at global batch 64 make 5 steps"):
        plan_windows(320, 64)
    assert min_samples(64) == 384
    plan_windows(min_samples(64), 64)


def test_throughput_is_the_median_window_with_its_range() -> None:
    summary = summarise(100, [1.0, 0.5, 2.0])
    assert summary.windows == (100.0, 200.0, 50.0)
    assert summary.median == 100.0 and summary.spread == pytest.approx(1.5)


def test_input_bound_at_eighty_percent_of_the_pipeline() -> None:
    assert is_input_bound(800.0, 1000.0)
    assert not is_input_bound(799.0, 1000.0)
    assert not is_input_bound(800.0, None)


def test_warm_up_is_measured_not_assumed() -> None:
    """The first window is always warm-up; a second one that compiles again (XLA under
    DataParallel, measured 14× slower on an H200) is too; a merely noisy one is not; never more
    than half the windows are dropped."""
    assert warmup_windows([9.0, 1.0, 1.1, 0.9, 1.0, 1.0]) == 1
    assert warmup_windows([9.0, 14.0, 1.1, 0.9, 1.0, 1.0]) == 2
    assert warmup_windows([9.0, 1.6, 1.1, 0.9, 1.0, 1.0]) == 1  # 1.6× is noise, not a compile
    assert warmup_windows([9.0, 9.0, 9.0, 9.0, 1.0, 1.0]) == 3  # at most half
    assert warmup_windows([5.0]) == 0
    assert warmup_windows([5.0, 1.0]) == 1


def test_warm_up_excess_counts_every_warm_up_window() -> None:
    assert warmup_excess([9.0, 14.0, 1.0, 1.0, 1.0, 1.0]) == pytest.approx(8.0 + 13.0)
    assert warmup_excess([3.0, 1.0, 1.0]) == pytest.approx(2.0)
    assert warmup_excess([3.0]) == 0.0
