"""The adaptive sweep past its edge (issue 46), pure: where the best finished rate at a batch is
the sweep's largest (smallest) rate, one rate more above (below) it, the sweep's log step further;
a worse or diverged rate beyond stops it; :data:`SWEEP_EXTRA` rates a side at most, which the
law's sentence then names."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tuner.core.adaptive_sweep import Extension, extension, extra_rates
from tuner.core.lr_law import law_from_points
from tuner.core.scaling import (
    SWEEP_EXTRA,
    scaled_learning_rate,
    sweep_extension_rules,
    sweep_rules,
)


def rates(*rules: str) -> dict[str, float]:
    """The rules' rates at batch 64 of a sweep of 5 from base 0.1 at batch 16 (0.05 ... 0.8)."""
    return {rule: scaled_learning_rate(rule, 0.1, 64, 16) for rule in (*sweep_rules(5), *rules)}


def falling(lrs: dict[str, float]) -> list[tuple[float, float]]:
    return [(lr, 1.0 / lr) for lr in lrs.values()]


def test_extension_rates_keep_the_sweeps_log_step() -> None:
    every = rates(*sweep_extension_rules(5))
    ordered = sorted(every.values())
    assert len(ordered) == 5 + 2 * SWEEP_EXTRA
    assert np.allclose(np.diff(np.log(ordered)), math.log(2))  # 0.05 x 16 over 4 steps
    assert every["sweep-6/5"] == pytest.approx(1.6) and every["sweep-0/5"] == pytest.approx(0.025)
    assert sweep_extension_rules(5) == (
        "sweep-0/5", "sweep--1/5", "sweep--2/5", "sweep-6/5", "sweep-7/5", "sweep-8/5",
    )  # fmt: skip


def test_best_at_the_top_edge_adds_one_rate_above() -> None:
    lrs = rates()
    assert extension(falling(lrs), [], lrs) == Extension("above", "sweep-5/5", "sweep-6/5", 0)
    lrs = rates("sweep-6/5")  # the added rate is the best again: one more
    assert extension(falling(lrs), [], lrs) == Extension("above", "sweep-6/5", "sweep-7/5", 1)


def test_best_at_the_bottom_edge_adds_one_rate_below() -> None:
    lrs = rates("sweep-0/5")
    points = [(lr, lr) for lr in lrs.values()]  # rising: the smallest is best
    assert extension(points, [], lrs) == Extension("below", "sweep-0/5", "sweep--1/5", 1)


def test_a_worse_or_diverged_rate_beyond_stops_it() -> None:
    lrs = rates("sweep-6/5")
    worse = [(lr, 1.0 / lr) for rule, lr in lrs.items() if rule != "sweep-6/5"]
    assert extension([*worse, (lrs["sweep-6/5"], 10.0)], [], lrs) is None  # worse: bracketed
    assert extension([*worse, (lrs["sweep-6/5"], math.inf)], [], lrs) is None  # diverged
    assert extension(worse, [lrs["sweep-6/5"]], lrs) is None  # stopped early as worse
    middle = [(lr, abs(math.log(lr / 0.4)) + 1) for lr in rates().values()]
    assert extension(middle, [], rates()) is None  # best inside the sweep


def test_a_rate_not_finished_is_no_edge_and_nothing_finished_decides_nothing() -> None:
    lrs = rates()
    unfinished_top = [p for p in falling(lrs) if p[0] != lrs["sweep-5/5"]]
    assert extension(unfinished_top, [], lrs) is None
    assert extension([], [], lrs) is None


def test_the_cap_stops_it_and_the_law_says_so() -> None:
    lrs = rates("sweep-6/5", "sweep-7/5", "sweep-8/5")
    capped = extension(falling(lrs), [], lrs)
    assert capped == Extension("above", "sweep-8/5", None, SWEEP_EXTRA)
    assert extra_rates(lrs) == {"above": SWEEP_EXTRA, "below": 0}
    assert extra_rates(["none", "sweep-0/5", "sweep--1/5"]) == {"above": 0, "below": 2}
    law = law_from_points({64: falling(lrs)}, extra=[(64, "above", SWEEP_EXTRA)])
    assert law is not None and law.regime == "unresolved"
    assert (
        "at batch 64 the largest rate tried was best (lr* >= 6.4) after 3 rates above the "
        "sweep, the most it adds (its cap, SWEEP_EXTRA = 3): lr* lies further out; move the "
        "sweep there with a larger base_lr"
    ) in law.words
    assert law.to_dict()["extra_rates_by_batch"] == {"64": {"above": 3}}
    stopped = law_from_points({64: falling(rates("sweep-6/5"))}, extra=[(64, "above", 1)])
    assert stopped is not None and "after 1 rate above the sweep (stopped before its cap of 3)" in (
        stopped.words
    )
    plain = law_from_points({64: falling(rates())})
    assert plain is not None and plain.words.endswith(": widen the sweep there")
