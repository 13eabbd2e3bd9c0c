"""Trainings that are one and the same: a run's training key (everything that decides what it
trains and measures), and the grid trial that already trained like a new one, whose measurement
the new one takes instead of training again (``same_as``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from optuna.trial import FrozenTrial

from tuner.core.outcome import TrialOutcome
from tuner.core.record import decode
from tuner.driver.decide.racing import REPEAT_INDEX, REPEAT_OF, SAME_AS, is_original

NOT_MEASURED = frozenset(
    {"status", "error", "final_loss", "throughput", "timings", "training_key", SAME_AS, REPEAT_OF,
     REPEAT_INDEX, "early_stop_skipped"}
)  # fmt: skip
"""Attributes a ``same_as`` trial does not take from its original: its outcome (set from the
values), the original's own child timings (no child ran for it) and the bookkeeping."""


def same_training(
    trials: Sequence[FrozenTrial], attrs: dict[str, Any], number: int
) -> FrozenTrial | None:
    """The first measured grid trial (not ``same_as``, not a repeat) that trains as ``attrs``
    say, or ``None`` (an original still running elsewhere does not count: this trial runs)."""
    key = attrs["training_key"]
    same = [
        t
        for t in trials
        # The key first: a cheap test that rules out nearly every trial of a large study.
        if decode(t).configuration.training_key == key and t.number != number and is_original(t)
    ]
    return min(same, key=lambda t: t.number) if same else None


def same_as(original: FrozenTrial, attrs: dict[str, Any]) -> TrialOutcome:
    """The outcome of a trial that trains exactly like ``original``: COMPLETE with its values
    and measured attributes (not this trial's configuration), and ``same_as`` its number."""
    measured_attrs = {
        key: value
        for key, value in decode(original).flat.items()
        if key not in NOT_MEASURED and key not in attrs
    }
    values = (float(original.values[0]), float(original.values[1]))
    return TrialOutcome("ok", values=values, attrs={**measured_attrs, SAME_AS: original.number})
