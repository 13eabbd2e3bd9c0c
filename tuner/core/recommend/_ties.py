"""The pick among the candidates, decided by the ratio of their values, not by whether two
intervals overlap.

Two overlapping 95 % intervals do not say two speeds are equal (batch 128 at 20.8k samples/s,
CI 12.4k–37.9k, and batch 64 at 10.5k, CI 6.8k–18.6k, overlap; 128 is twice as fast on every
estimate). So:

* **Practically equal**: a candidate whose value the best one's beats by at most the tie margin
  (5 % by default: a throughput ratio ≤ 1.05) is as good in practice; of the best and those, the
  smallest global batch is picked (least memory per device; at equal speed a larger batch only
  adds generalisation risk), as before.
* **Close calls**: any other candidate whose ratio to the pick has a 95 % interval reaching 1
  (:func:`tuner.core.stats.ratio_interval`, as the verdict's speedup) is not clearly worse: the
  pick has the better point estimate, and a seeded bootstrap over the runs says how sure that is
  (``batch 128 is faster in 870 of 1000 resamples of the runs``); more repeats would settle it.
* Every other candidate is clearly worse.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tuner.core.racing import Decision, Entry, best_entry
from tuner.core.recommend import DEFAULT_TIE_MARGIN
from tuner.core.stats import BOOTSTRAP_RESAMPLES, Interval, bootstrap_wins, ratio_interval

MARGIN_TIE_RULE = (
    "within the tie margin of the best measured value (practically equal): the smallest global "
    "batch of them is picked (least memory per device; at equal speed larger batches only add "
    "generalisation risk)"
)
SAME_BATCH_MARGIN_RULE = (
    "within the tie margin of the best measured value, all at one global batch: the better "
    "measured value is picked"
)


@dataclass(frozen=True)
class CloseCall:
    """A candidate the pick beats on the point estimate but not beyond the noise."""

    number: int
    batch: int
    ratio: float
    """How many times better the pick's value is (its throughput over this one's, or this one's
    time over the pick's): above 1."""
    interval: Interval | None
    """The ratio's 95 % interval (it reaches 1); ``None`` when an interval is missing."""
    wins: int | None
    """Bootstrap resamples of the runs in which the pick was better (``None``: too few runs)."""
    resamples: int = BOOTSTRAP_RESAMPLES

    def record(self) -> dict[str, object]:
        """The JSON's entry of ``close_calls``."""
        return {
            "trial_number": self.number,
            "global_batch_size": self.batch,
            "ratio": self.ratio,
            "ratio_ci": None if self.interval is None else self.interval.as_list(),
            "resamples_won": self.wins,
            "resamples": self.resamples if self.wins is not None else None,
        }


@dataclass(frozen=True)
class Pick(Decision):
    """A :class:`~tuner.core.racing.Decision` with the tie margin it used and its close calls."""

    margin: float = DEFAULT_TIE_MARGIN
    close: list[CloseCall] = field(default_factory=list)


def advantage(better: Entry, other: Entry, *, higher_is_better: bool) -> float:
    """How many times ``better``'s value beats ``other``'s (``inf`` for a value that is not
    positive: no ratio)."""
    num, den = (better.value, other.value) if higher_is_better else (other.value, better.value)
    return num / den if num > 0 and den > 0 else float("inf")


def decide(
    entries: Sequence[Entry],
    runs: Mapping[int, Sequence[float]] | None = None,
    *,
    higher_is_better: bool = True,
    margin: float = DEFAULT_TIE_MARGIN,
) -> Pick:
    """The pick among ``entries`` (see the module's docstring). ``runs`` maps a candidate's
    number to its per-run values, for the bootstrap of a close call."""
    if not entries:
        raise ValueError("no candidate to decide between")
    best = best_entry(entries, higher_is_better=higher_is_better)
    equal = [
        e for e in entries if advantage(best, e, higher_is_better=higher_is_better) <= 1 + margin
    ]
    sign = 1.0 if higher_is_better else -1.0
    chosen = min(equal, key=lambda e: (e.batch, -sign * e.value, e.number))
    tied = sorted(e.number for e in equal if e is not chosen)
    rule = ""
    if tied:
        same = all(e.batch == chosen.batch for e in equal)
        rule = SAME_BATCH_MARGIN_RULE if same else MARGIN_TIE_RULE
    kept = {e.number for e in equal}
    close = [
        call
        for e in entries
        if e.number not in kept
        and (call := close_call(chosen, e, runs or {}, higher_is_better=higher_is_better))
    ]
    return Pick(chosen.number, tied, rule, margin=margin, close=close)


def close_call(
    chosen: Entry,
    rival: Entry,
    runs: Mapping[int, Sequence[float]],
    *,
    higher_is_better: bool,
) -> CloseCall | None:
    """``rival`` as a close call of ``chosen``, or ``None`` when the ratio's interval lies
    above 1 (clearly worse). A missing interval counts as exact, as a value stored without one
    always did."""
    ratio = advantage(chosen, rival, higher_is_better=higher_is_better)
    top, bottom = (chosen, rival) if higher_is_better else (rival, chosen)
    interval = ratio_interval(top.value, _exact(top), bottom.value, _exact(bottom))
    if interval is None or interval.low > 1:
        return None
    known = top.interval is not None and bottom.interval is not None
    wins = bootstrap_wins(
        runs.get(chosen.number) or [],
        runs.get(rival.number) or [],
        higher_is_better=higher_is_better,
    )
    return CloseCall(rival.number, rival.batch, ratio, interval if known else None, wins)


def _exact(entry: Entry) -> Interval:
    return entry.interval or Interval(entry.value, entry.value, "one value")
