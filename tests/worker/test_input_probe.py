"""The input probe times the pipeline alone for a bounded time, not for whole windows."""

from __future__ import annotations

import itertools
import time

from tuner.worker import meters


def _slow_stream(drawn: list[int], pause_s: float):
    for index in itertools.count():
        time.sleep(pause_s)
        drawn.append(index)
        yield index


def test_a_long_window_is_cut_to_the_time_budget() -> None:
    drawn: list[int] = []
    waited: list[int] = []
    rate = meters.input_throughput(
        _slow_stream(drawn, 0.005), steps=10_000, global_batch=32, wait=waited.append, seconds=0.1
    )
    # Far fewer than the two windows (20,000 batches) the probe once drew, and the last batch of
    # each part was waited for.
    assert 2 * meters.INPUT_PROBE_MIN_BATCHES <= len(drawn) < 1_000
    assert waited and waited[-1] == drawn[-1]
    assert rate > 0


def test_a_short_window_is_drawn_whole_twice() -> None:
    drawn: list[int] = []
    meters.input_throughput(_slow_stream(drawn, 0.0), steps=5, global_batch=8, wait=lambda b: b)
    assert len(drawn) == 10  # warm-up and timed part, each one window of 5 batches


def test_slow_batches_are_timed_at_least_the_minimum() -> None:
    drawn: list[int] = []
    meters.input_throughput(
        _slow_stream(drawn, 0.02), steps=100, global_batch=8, wait=lambda b: b, seconds=0.001
    )
    assert len(drawn) == 2 * meters.INPUT_PROBE_MIN_BATCHES
