"""The pick among the candidates: at one computation by the loss, between batches by the ratio
of the values, not by whether two intervals overlap (the rules and why:
``docs/guide/uncertainty.md``).

* **One computation, by the loss**: candidates that differ only in the learning rate
  (:attr:`tuner.core.racing.Entry.computation`) do the same work per step: the lowest final loss
  is kept (deterministic), the others tied with it.
* **Practically equal** (within the tie margin): of them the smallest global batch is picked.
* **Close calls**: any other whose ratio to the pick has a 95 % interval reaching 1
  (:func:`tuner.core.stats.ratio_interval`); the rest are clearly worse.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tuner.core.racing import Decision, Entry, best_entry, by_loss
from tuner.core.recommend import DEFAULT_TIE_MARGIN
from tuner.core.stats import Interval, ratio_interval

MARGIN_TIE_RULE = (
    "within the tie margin of the best measured value (practically equal): the smallest global "
    "batch of them is picked (least memory per device; at equal speed larger batches only add "
    "generalisation risk)"
)
SAME_BATCH_RULE = (
    "at one global batch the lower final loss is picked: the same computation, so their "
    "throughputs differ only by noise"
)


@dataclass(frozen=True)
class CloseCall:
    """A candidate the pick beats on the point estimate but not beyond the noise."""

    number: int
    batch: int
    ratio: float
    """How many times better the pick's value is: above 1."""
    interval: Interval | None
    """The ratio's 95 % interval (it reaches 1); ``None`` when an interval is missing."""
    runs: int = 1
    """The most runs either side has had: more repeats than this would settle it."""

    def record(self) -> dict[str, object]:
        return {
            "trial_number": self.number,
            "global_batch_size": self.batch,
            "ratio": self.ratio,
            "ratio_ci": None if self.interval is None else self.interval.as_list(),
        }


@dataclass(frozen=True)
class Pick(Decision):
    """A :class:`~tuner.core.racing.Decision` with its tie margin, close calls and the
    candidates of its computation the loss decided against (in ``tied_with`` too)."""

    margin: float = DEFAULT_TIE_MARGIN
    close: list[CloseCall] = field(default_factory=list)
    same_batch: list[int] = field(default_factory=list)


def advantage(better: Entry, other: Entry, *, higher_is_better: bool) -> float:
    """How many times ``better``'s value beats ``other``'s (``inf``: a value is not positive)."""
    num, den = (better.value, other.value) if higher_is_better else (other.value, better.value)
    return num / den if num > 0 and den > 0 else float("inf")


def decide(
    entries: Sequence[Entry], *, higher_is_better: bool = True, margin: float = DEFAULT_TIE_MARGIN
) -> Pick:
    """The pick among ``entries`` (see the module's docstring)."""
    if not entries:
        raise ValueError("no candidate to decide between")
    same = by_loss(entries)
    kept = [e for e in entries if e.number in same]
    best = best_entry(kept, higher_is_better=higher_is_better)
    equal = [e for e in kept if advantage(best, e, higher_is_better=higher_is_better) <= 1 + margin]
    sign = 1.0 if higher_is_better else -1.0
    chosen = min(equal, key=lambda e: (e.batch, -sign * e.value, e.number))
    same_batch = sorted(e.number for e in same[chosen.number])
    tied = sorted([*(e.number for e in equal if e is not chosen), *same_batch])
    rules = [MARGIN_TIE_RULE] if len(equal) > 1 else []
    rule = "; ".join([*rules, *([SAME_BATCH_RULE] if same_batch else [])])
    numbers = {e.number for e in equal}
    close = [
        call
        for e in kept
        if e.number not in numbers
        and (call := close_call(chosen, e, higher_is_better=higher_is_better))
    ]
    return Pick(chosen.number, tied, rule, margin=margin, close=close, same_batch=same_batch)


def close_call(chosen: Entry, rival: Entry, *, higher_is_better: bool) -> CloseCall | None:
    """``rival`` as a close call of ``chosen``, or ``None`` when clearly worse. A missing
    interval counts as exact, as a value stored without one always did."""
    ratio = advantage(chosen, rival, higher_is_better=higher_is_better)
    top, bottom = (chosen, rival) if higher_is_better else (rival, chosen)
    interval = ratio_interval(top.value, _exact(top), bottom.value, _exact(bottom))
    if interval is None or interval.low > 1:
        return None
    known = top.interval is not None and bottom.interval is not None
    most = max(chosen.runs, rival.runs)
    return CloseCall(rival.number, rival.batch, ratio, interval if known else None, most)


def _exact(entry: Entry) -> Interval:
    return entry.interval or Interval(entry.value, entry.value, "one value")
