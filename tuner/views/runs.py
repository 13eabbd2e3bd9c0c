"""One measurement per configuration, as every view shows it (pure). A ``same_as = N`` trial's
stored numbers copy N's first run, stale once racing re-ran N, so the views show N's
configuration's *representative*: the trial with the most runs (the lowest number on a tie)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from optuna.trial import FrozenTrial

from tuner.core.record import decode


def original_number(trial: FrozenTrial) -> int:
    """The trial that first trained this configuration (``repeat_of``, else its own number)."""
    repeat_of = decode(trial).reuse.repeat_of
    return int(repeat_of) if isinstance(repeat_of, int) else trial.number


def run_count(trial: FrozenTrial) -> int | None:
    """How many runs the trial's numbers rest on (``None``: it stores no ``repeats``)."""
    repeats = decode(trial).result.repeats
    return len(repeats) if isinstance(repeats, list) and repeats else None


def representative(number: int, trials: Iterable[FrozenTrial]) -> FrozenTrial | None:
    """The representative of trial ``number``'s configuration among ``trials``, or ``None``."""
    runs = [t for t in trials if original_number(t) == number]
    if not runs:
        return None
    return min(runs, key=lambda t: (-(run_count(t) or 0), t.number))


def shown_measurement(trial: FrozenTrial, trials: Sequence[FrozenTrial]) -> FrozenTrial:
    """The trial whose measured numbers ``trial``'s row shows: for a ``same_as`` trial the
    representative of the configuration it trains like (when among ``trials``), else itself."""
    same_as = decode(trial).reuse.same_as
    if not isinstance(same_as, int):
        return trial
    return representative(same_as, trials) or trial


def representatives(
    shown: Iterable[FrozenTrial], trials: Sequence[FrozenTrial]
) -> list[FrozenTrial]:
    """``shown``, each trial replaced by its representative among ``trials``, deduplicated."""
    by_original: dict[int, list[FrozenTrial]] = {}
    for t in trials:  # one pass, not one per shown trial (quadratic at 1,000 trials)
        by_original.setdefault(original_number(t), []).append(t)
    seen: set[int] = set()
    chosen = []
    for trial in shown:
        runs = by_original.get(original_number(trial), [])
        best = representative(original_number(trial), runs) or trial
        if best.number not in seen:
            seen.add(best.number)
            chosen.append(best)
    return chosen


def run_numbers(trial: FrozenTrial, trials: Iterable[FrozenTrial]) -> list[int]:
    """The trials of ``trial``'s configuration: ``[0, 3, 9]`` for #0 repeated as #3 and #9."""
    runs = [t.number for t in trials if original_number(t) == original_number(trial)]
    return sorted(runs or [trial.number])


def runs_label(numbers: Sequence[int]) -> str:
    """``runs #0, #3, #9``: the trials a representative's numbers rest on (empty for one)."""
    return "runs " + ", ".join(f"#{n}" for n in numbers) if len(numbers) > 1 else ""


def each_run(
    trial: FrozenTrial, trials: Iterable[FrozenTrial]
) -> list[tuple[int, float | None, float | None]]:
    """The runs a representative's numbers rest on: ``(trial number, median throughput, final
    loss)``; empty for a configuration run once, or where the stored runs do not match its
    trials one to one (a duplicate run by a second worker)."""
    numbers = run_numbers(trial, trials)
    repeats = decode(trial).result.repeats
    if len(numbers) < 2 or not isinstance(repeats, list) or len(repeats) != len(numbers):
        return []
    losses = decode(trial).result.repeat_losses
    losses = losses if isinstance(losses, list) and len(losses) == len(numbers) else []
    return [
        (number, _number(repeats[i]), _number(losses[i]) if losses else None)
        for i, number in enumerate(numbers)
    ]


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def interval(attrs: dict[str, Any], key: str) -> tuple[float, float] | None:
    """A stored ``[low, high]`` as a pair of finite numbers, or ``None``."""
    value = attrs.get(key)
    if not isinstance(value, list | tuple) or len(value) != 2:
        return None
    try:
        low, high = float(value[0]), float(value[1])
    except (TypeError, ValueError):
        return None
    return (low, high) if math.isfinite(low) and math.isfinite(high) else None
