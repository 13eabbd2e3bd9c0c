"""The verdict on replicas: the speedup's interval and the one sentence that reads it."""

from __future__ import annotations

import pytest
from trials import SIGNATURE, make_trial, measured_trial, run_recommend

from tuner.core.options import naming
from tuner.core.recommend._ties import CloseCall
from tuner.core.recommend._verdict import close_call_clause, compared, measure_speedup, verdict
from tuner.core.stats import Interval, ratio_interval

BASELINE = {"throughput": 1000.0, "throughput_ci": [990.0, 1010.0]}


def sentence(
    throughput: float, low: float, high: float, tied_with: tuple[int, ...] = (), batch: int = 64
) -> str:
    chosen = Interval(low, high, "t over 3 runs")
    return verdict(measure_speedup(throughput, chosen, 2, BASELINE), tied_with, batch)


def test_slower_only_when_the_whole_interval_is_below_one() -> None:
    assert sentence(840.0, 800.0, 880.0) == (
        "2 replicas are slower than 1 here (0.84×, 95 % CI 0.80–0.88): train on one device"
    )


def test_faster_only_when_the_whole_interval_is_above_one() -> None:
    assert sentence(1940.0, 1910.0, 1970.0) == (
        "2 replicas give 1.94× one device (95 % CI 1.90–1.98), scaling efficiency 97 %"
    )


def test_an_interval_across_one_is_no_faster_within_the_noise() -> None:
    assert sentence(1020.0, 910.0, 1140.0) == (
        "2 replicas are no faster than 1 within the noise (1.02×, 95 % CI 0.91–1.14)"
    )


def test_ties_are_named_in_the_same_sentence() -> None:
    text = sentence(1930.0, 1910.0, 1950.0, tied_with=(7, 3))
    assert text.endswith(
        "; trials 3 and 7 are within 5 % of the best throughput (practically equal), "
        "so the smallest global batch (64) was picked"
    )
    assert text.count(".") <= 3  # one sentence: the only dots are decimals


def test_a_tie_at_one_batch_says_the_loss_decided() -> None:
    # Issue 46: at one batch the throughputs differ by noise only; the loss decides.
    speedup = measure_speedup(1930.0, Interval(1910.0, 1950.0, "t"), 2, BASELINE)
    text = verdict(speedup, (3,), 128, same_batch=(3,))
    assert text.endswith(
        "; trial 3 runs the same computation at batch 128 with another learning rate (a "
        "throughput difference is noise), so the lower final loss was picked"
    )
    assert "within 5 %" not in text
    both = verdict(speedup, (3, 5), 64, same_batch=(5,))
    assert "; trial 3 is within 5 % of the best throughput (practically equal), so the " in both
    assert "; trial 5 runs the same computation at batch 64" in both


@pytest.mark.parametrize(
    ("low", "high", "word"),
    [(1.10, 1.50, "faster"), (0.60, 0.90, "slower"), (0.93, 4.22, "not distinguishable")],
)
def test_faster_slower_or_not_distinguishable_by_whether_the_interval_excludes_one(
    low: float, high: float, word: str
) -> None:
    assert compared(Interval(low, high, "log-ratio")) == word
    assert compared(None) == "not distinguishable"  # no interval rules nothing out


def test_a_close_call_reads_its_interval_and_names_the_flag_that_settles_it() -> None:
    # Issue 46: "faster in 1000 of 1000 resamples (95 % CI 0.88-2.21)" said two things; the
    # interval alone speaks now, and the flag that gives more repeats is named.
    speedup = measure_speedup(1930.0, Interval(1910.0, 1950.0, "t"), 2, BASELINE)
    call = CloseCall(4, 64, 1.984, Interval(0.88, 2.21, "log-ratio"), 3)
    text = verdict(speedup, (), 128, close=[call])
    assert text.endswith(
        "; batch 128 and batch 64 (trial 4) are not distinguishable in throughput (1.98×, "
        "95 % CI 0.88–2.21); more repeats would settle it (--max-repeats above 3)"
    )
    assert "faster than batch 64" not in text and "resamples" not in text
    with naming("search", keywords=True):
        assert "(max_repeats= above 3)" in verdict(speedup, (), 128, close=[call])
    single = CloseCall(4, 64, 1.5, None, 1)
    text = verdict(speedup, (), 128, close=[single], policy="time-to-target")
    assert "batch 128 and batch 64 (trial 4) are not distinguishable in time to target" in text
    assert text.endswith(
        "ran once with too few windows); more repeats would settle it (--max-repeats above 1)"
    )
    # An interval that excludes 1 reads as a plain comparison, with nothing left to settle.
    clear = CloseCall(4, 64, 1.5, Interval(1.2, 1.9, "log-ratio"), 3)
    assert close_call_clause(clear, 128) == (
        "batch 128 is faster than batch 64 (trial 4) (1.50×, 95 % CI 1.20–1.90)"
    )


def test_the_interval_is_the_ratio_of_the_two_throughput_intervals() -> None:
    chosen = Interval(1800.0, 2000.0, "t over 3 runs")
    speedup = measure_speedup(1900.0, chosen, 2, BASELINE)
    expected = ratio_interval(1900.0, chosen, 1000.0, Interval(990.0, 1010.0, "stored"))
    assert expected is not None and speedup.interval is not None
    assert speedup.interval.as_list() == pytest.approx(expected.as_list())
    fields = speedup.fields()
    assert fields["speedup_vs_single_device"] == pytest.approx(1.9)
    assert fields["scaling_efficiency"] == pytest.approx(0.95)
    assert fields["scaling_efficiency_ci"] == pytest.approx([x / 2 for x in expected.as_list()])


def test_a_baseline_with_window_rates_gives_an_interval() -> None:
    baseline = {"throughput": 1000.0, "epoch_throughputs": [50.0, 990.0, 1000.0, 1010.0]}
    speedup = measure_speedup(1900.0, Interval(1800.0, 2000.0, "t"), 2, baseline)
    assert speedup.interval is not None and speedup.interval.low > 1.0


def test_without_an_interval_the_measurement_and_why() -> None:
    speedup = measure_speedup(1900.0, None, 2, {"throughput": 1000.0})
    assert speedup.speedup == pytest.approx(1.9) and speedup.interval is None
    assert verdict(speedup) == (
        "2 replicas measured 1.90× one device, scaling efficiency 95 %, with no interval "
        "(the chosen configuration and the baseline ran once without window rates): one "
        "measurement can rest on noise"
    )


@pytest.mark.parametrize(
    ("replicas", "baseline", "other_model", "why"),
    [
        (2, None, False, "the study has no single-device baseline"),
        (2, {"throughput": None}, False, "the study has no single-device baseline"),
        (1, BASELINE, False, "it trains on one device"),
        (2, BASELINE, True, "the baseline trained another model configuration"),
    ],
)
def test_without_a_baseline_the_speedup_is_unknown_and_why(
    replicas: int, baseline: dict[str, object] | None, other_model: bool, why: str
) -> None:
    speedup = measure_speedup(1900.0, None, replicas, baseline, other_model=other_model)
    assert speedup.fields() == {
        "baseline_throughput": None,
        "speedup_vs_single_device": None,
        "scaling_efficiency": None,
        "speedup_ci": None,
        "scaling_efficiency_ci": None,
    }
    assert verdict(speedup).startswith(f"The speedup over one device is unknown: {why}")


def test_the_recommendation_carries_the_verdict_and_the_intervals() -> None:
    trials = [measured_trial(0, 128, runs=[830.0, 840.0, 850.0])]
    rec = run_recommend(trials, baselines={SIGNATURE: BASELINE})
    assert rec["verdict"].startswith("2 replicas are slower than 1 here (0.84×, 95 % CI 0.8")
    assert rec["speedup_ci"][0] < 0.84 < rec["speedup_ci"][1] < 1
    assert rec["scaling_efficiency_ci"] == pytest.approx([x / 2 for x in rec["speedup_ci"]])
    per = rec["per_device_signature"][SIGNATURE]
    assert per["verdict"] == rec["verdict"] and per["speedup_ci"] == rec["speedup_ci"]


def test_no_baseline_in_the_recommendation() -> None:
    rec = run_recommend([make_trial(0, 64, loss=1.0, throughput=10.0)])
    assert rec["speedup_ci"] is None
    assert rec["verdict"].startswith("The speedup over one device is unknown")
