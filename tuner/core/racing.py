"""Racing: which close candidates need another run (``docs/guide/uncertainty.md``).

Of one computation's candidates (only the rate differs) the lowest final loss is kept
(:func:`by_loss`: losses are deterministic, repeats cannot change that pick); the kept ones whose
95 % intervals overlap the best one's are re-run (:func:`to_repeat`). Still tied:
:mod:`tuner.core.recommend._ties` decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tuner.core.stats import Interval


@dataclass(frozen=True)
class Entry:
    """One candidate configuration, by its representative trial's number."""

    number: int
    value: float
    """Throughput (higher is better) or time to target (lower is better)."""
    interval: Interval | None
    runs: int
    batch: int
    loss: float | None = None
    """The final loss: what decides between candidates of one computation."""
    computation: tuple[object, ...] = ()
    """What one step computes apart from the rate: candidates alike here differ in throughput
    only by noise. Empty: compared by value only (a time to target, which the rate changes)."""


@dataclass(frozen=True)
class Decision:
    """The pick, the candidates still tied with it and, when there are some, the rule used."""

    chosen: int
    tied_with: list[int] = field(default_factory=list)
    rule: str = ""


def best_entry(entries: Sequence[Entry], *, higher_is_better: bool = True) -> Entry:
    """The entry with the best value (the smaller batch, then the lower number, on equal values)."""
    sign = 1.0 if higher_is_better else -1.0
    return max(entries, key=lambda e: (sign * e.value, -e.batch, -e.number))


def by_loss(entries: Sequence[Entry]) -> dict[int, list[Entry]]:
    """Per kept candidate, the others of its computation (the lowest final loss is kept)."""
    groups: dict[object, list[Entry]] = {}
    for entry in entries:
        key = entry.computation if entry.computation and entry.loss is not None else entry.number
        groups.setdefault(key, []).append(entry)
    kept: dict[int, list[Entry]] = {}
    for members in groups.values():
        # More runs before the number on equal losses: a repeat makes its configuration's
        # representative a later trial, and the kept one must stay kept (racing raced it).
        first, *others = sorted(members, key=lambda e: (e.loss or 0.0, -e.runs, e.number))
        kept[first.number] = others
    return kept


def contenders(entries: Sequence[Entry]) -> list[Entry]:
    """The entries :func:`by_loss` keeps, in their order: what racing decides between."""
    kept = by_loss(entries)
    return [e for e in entries if e.number in kept]


def tie_set(entries: Sequence[Entry], *, higher_is_better: bool = True) -> list[Entry]:
    """The best of the :func:`contenders` and every one the measurements cannot tell from it."""
    kept = contenders(entries)
    best = best_entry(kept, higher_is_better=higher_is_better)
    return [best, *(e for e in kept if e is not best and is_tied(e, best))]


def is_tied(entry: Entry, best: Entry) -> bool:
    """Whether ``entry``'s interval overlaps ``best``'s (no interval: it cannot be ruled out)."""
    if entry.interval is None or best.interval is None:
        return True
    return entry.interval.overlaps(best.interval)


def to_repeat(
    entries: Sequence[Entry], max_repeats: int, *, higher_is_better: bool = True
) -> list[int]:
    """The numbers of the :func:`contenders` that need one more run, ascending (empty once
    decided, or with ``max_repeats < 2``): first every single-run one, then the tie's members
    below ``max_repeats``."""
    if max_repeats < 2 or not entries:
        return []
    single = [e.number for e in contenders(entries) if e.runs < 2]
    if single:  # even a lone candidate: its interval (and the speedup's) needs a second run
        return sorted(single)
    ties = tie_set(entries, higher_is_better=higher_is_better)
    if len(ties) < 2:
        return []
    return sorted(e.number for e in ties if e.runs < max_repeats)


def most_decisive_first(
    entries: Sequence[Entry], numbers: Sequence[int], *, higher_is_better: bool = True
) -> list[int]:
    """``numbers`` (of :func:`to_repeat`) in the order their repeats help most (a budget runs
    them so): fewer runs first, then the best, then the others closest first."""
    if not entries:
        return list(numbers)
    best = best_entry(contenders(entries), higher_is_better=higher_is_better)
    by_number = {e.number: e for e in entries}

    def key(number: int) -> tuple[int, bool, float, int]:
        entry = by_number[number]
        return (entry.runs, entry is not best, gap_to(entry, best), number)

    return sorted(numbers, key=key)


def gap_to(entry: Entry, best: Entry) -> float:
    """How far ``entry``'s value is from ``best``'s, relative to it (``0.03``: 3 %)."""
    return abs(entry.value - best.value) / abs(best.value) if best.value else 0.0


def gaps_to_best(
    entries: Sequence[Entry], *, higher_is_better: bool = True
) -> list[tuple[int, float]]:
    """``(number, gap)`` of the :func:`contenders` but the best, closest first."""
    kept = contenders(entries)
    if not kept:
        return []
    best = best_entry(kept, higher_is_better=higher_is_better)
    gaps = [(e.number, gap_to(e, best)) for e in kept if e is not best]
    return sorted(gaps, key=lambda pair: (pair[1], pair[0]))
