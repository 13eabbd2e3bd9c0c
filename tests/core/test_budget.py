"""The time budget's pure logic: durations, run estimates, what fits, what was left out, the
plan line under a budget, the order of repeats, and ``--quick``'s options (no child, no clock)."""

from __future__ import annotations

import pytest

from tuner.core.budget import Ledger, left_out_line, quick_line
from tuner.core.errors import ConfigError
from tuner.core.plan import SearchPlan, plan_line
from tuner.core.progress import format_budget
from tuner.core.racing import Entry, gaps_to_best, most_decisive_first
from tuner.core.spec._fields import parse_duration
from tuner.core.stats import Interval
from tuner.driver.options import SearchOptions


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("15m", 900), ("1h", 3600), ("1h30m", 5400), ("2m30s", 150), ("90", 90),
     (" 15M ", 900), (45, 45), (1.5, 1.5)],
)  # fmt: skip
def test_durations_are_read_as_people_write_them(text: object, seconds: float) -> None:
    assert parse_duration(text, "--budget") == seconds


@pytest.mark.parametrize("bad", ["soon", "", "15x", "m", "-5m", "0", 0, True, "1m1h", None])
def test_a_bad_duration_is_one_line_naming_the_flag(bad: object) -> None:
    with pytest.raises(ConfigError, match=r"^--budget must be a positive duration such as 90s"):
        parse_duration(bad, "--budget")


def test_a_budget_is_printed_as_it_is_written() -> None:
    assert [format_budget(s) for s in (90, 900, 3600, 5400, 59)] == [
        "1m30s",
        "15m",
        "1h",
        "1h30m",
        "59s",
    ]


def test_a_run_is_estimated_from_its_own_batch_else_its_replicas_else_any() -> None:
    ledger = Ledger(600, Clock())
    assert ledger.estimate((64, 2)) is None  # nothing to go by: the first run starts
    ledger.measured((64, 1), 40.0)  # the baseline, one device
    assert ledger.estimate((64, 2)) == 40.0
    ledger.measured((64, 2), 20.0)
    ledger.measured((64, 2), 30.0)
    assert ledger.estimate((64, 2)) == 25.0
    assert ledger.estimate((128, 2)) == 25.0  # same replicas: the trials, not the baseline
    assert ledger.estimate((128, 1)) == 40.0


def test_runs_fit_in_order_and_a_shorter_one_may_follow_one_that_does_not() -> None:
    clock = Clock()
    ledger = Ledger(100, clock)
    ledger.measured((64, 2), 30.0)
    ledger.measured((256, 2), 10.0)
    clock.now += 50.0  # 50 s left
    assert ledger.fits([(64, 2), (64, 2), (256, 2)]) == [True, False, True]
    assert ledger.fits([(64, 2)], reserve_s=30.0) == [False]  # the grid after it comes first
    assert ledger.admit("repeats", [(64, 2), (64, 2)]) == [True, False]
    assert ledger.left_out == {"baseline": 0, "grid": 0, "seeds": 0, "repeats": 1}
    assert ledger.more_s == 30.0 and ledger.cut


def test_the_closing_line_says_what_was_left_out_and_what_it_costs() -> None:
    clock = Clock()
    ledger = Ledger(900, clock)
    clock.now += 700
    assert left_out_line(ledger, 1) == "budget 15m: nothing left out (12 min spent)"
    ledger.measured((128, 2), 90.0)
    ledger.leave_out("repeats", [(128, 2)] * 4)
    assert left_out_line(ledger, 2) == (
        "budget 15m: left out 4 repeats; 2 candidates still tied: 95 % intervals overlap; a "
        "larger budget (≈ 6 min more) would run them"
    )
    ledger.leave_out("grid", [(256, 2)])
    ledger.leave_out("seeds", [(64, 2)] * 2)
    line = left_out_line(ledger, None)
    assert line.startswith("budget 15m: left out 1 grid point, 2 seeds, 4 repeats (the answer ")
    assert "seed noise not measured" in line and "≈ 10 min more" in line
    record = ledger.record(line, None)
    assert record["left_out"] == {"baseline": 0, "grid": 1, "seeds": 2, "repeats": 4}
    assert record["budget_s"] == 900 and record["spent_s"] == 700 and record["line"] == line


def _entry(number: int, value: float, runs: int, batch: int = 64) -> Entry:
    return Entry(number, value, Interval(value * 0.9, value * 1.1, "test"), runs, batch)


def test_repeats_run_most_decisive_first() -> None:
    entries = [_entry(1, 900, 2), _entry(2, 1000, 2), _entry(3, 950, 2), _entry(4, 700, 1)]
    # One run first (its second brings the first interval), then the best, then by gap.
    assert most_decisive_first(entries, [1, 2, 3, 4]) == [4, 2, 3, 1]
    # Time to target: lower is better.
    times = [_entry(1, 10.0, 2), _entry(2, 12.0, 2), _entry(3, 11.0, 2)]
    assert most_decisive_first(times, [3, 2, 1], higher_is_better=False) == [1, 3, 2]
    assert gaps_to_best(entries) == [(3, 0.05), (1, 0.1), (4, 0.3)]


def test_the_quick_line_names_the_differences_it_cannot_resolve() -> None:
    assert quick_line([(3, 0.05), (1, 0.4)]) == (
        "quick (one run per configuration, no seed runs): run-to-run noise not measured, so "
        "these throughput differences from the pick are not resolved: #3 5% behind, #1 40% "
        "behind; run without --quick for intervals"
    )
    assert quick_line([], seeds=True).endswith("no other candidate within the loss tolerance")


def test_the_plan_line_says_whether_it_fits_the_budget() -> None:
    plan = SearchPlan(check=1, baseline=1, grid=4, seeds=2, repeats_at_most=4, budget_s=900)
    assert plan_line(plan).endswith(
        "the time is estimated once a training has run; within the 15m budget"
    )
    line = plan_line(plan, 300.0, 1000.0, head="left", budget_left_s=800.0)
    assert line.endswith("(≤ 17 min with repeats); within the 15m budget, repeats as far as it "
                         "allows")  # fmt: skip
    over = plan_line(plan, 1200.0, 1500.0, head="left", budget_left_s=800.0)
    assert over.endswith(
        "; over the 15m budget (≈ 13 min left): runs what fits, the grid before seeds and "
        "repeats, and says what it left out"
    )
    assert "budget" not in plan_line(SearchPlan(check=1, grid=2), 10.0)


def test_quick_is_a_preset_an_explicit_flag_overrides() -> None:
    quick = SearchOptions(quick=True).spec_overrides()
    assert quick["search.max_repeats"] == 1 and quick["search.seeds"] == 1
    mixed = SearchOptions(quick=True, seeds=3, budget="15m").spec_overrides()
    assert mixed["search.seeds"] == 3 and mixed["search.max_repeats"] == 1
    assert mixed["search.budget"] == "15m"
    assert SearchOptions().spec_overrides().get("search.max_repeats") is None


def test_a_budget_overrun_is_said() -> None:
    clock = Clock()
    ledger = Ledger(60, clock)
    clock.now += 95
    ledger.leave_out("grid", [(128, 2)])
    assert left_out_line(ledger, None).startswith(
        "budget 1m (ran 35 s over: the workload check, one baseline run and the grid's first "
        "point always run, and a run is never cut): left out 1 grid point"
    )


def test_runs_left_out_before_any_was_timed_have_no_price() -> None:
    ledger = Ledger(120, Clock())
    ledger.leave_out("baseline", [(64, 1)] * 2)  # before the baseline ran: nothing to go by
    assert left_out_line(ledger, 2) == (
        "budget 2m: left out 2 baseline runs; 2 candidates still tied: 95 % intervals overlap; "
        "a larger budget would run them"
    )
