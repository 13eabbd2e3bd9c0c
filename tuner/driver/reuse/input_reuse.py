"""Measuring the input pipeline once per pipeline, batch and devices, not once per trial (~1.5 s
a trial on 2 CPU cores): each trial stores its input key
(:func:`~tuner.driver.reuse.keys.input_key`); a later trial with the same key is sent the earlier
figure and stores it with ``input_throughput_from``. Only the study's own trials are searched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import optuna
from optuna.trial import FrozenTrial

from tuner.core.outcome import TrialOutcome
from tuner.core.protocol import TrialRequest
from tuner.core.record import decode, decode_study
from tuner.driver.reuse.keys import input_key
from tuner.storage.guarded import storage_call

INPUT_KEY = "input_key"
"""The trial attribute holding the hash of what its ``input_throughput`` depends on."""
REUSED_FROM = "input_throughput_from"
"""The trial attribute naming the trial whose ``input_throughput`` this one reports."""


def find_input(trials: Sequence[FrozenTrial], key: str) -> tuple[float, int] | None:
    """The earliest trial in ``trials`` that measured its input pipeline itself under ``key``:
    ``(its input_throughput, its number)``; ``None`` if none did."""
    for trial in sorted(trials, key=lambda t: t.number):
        attrs = decode(trial).flat
        figure = attrs.get("input_throughput")
        if attrs.get(INPUT_KEY) != key or attrs.get(REUSED_FROM) is not None:
            continue
        if isinstance(figure, int | float) and figure > 0:
            return float(figure), trial.number
    return None


class InputReuse:
    """One search's reuse of measured input pipelines: :meth:`prepare` before a trial's child,
    :meth:`record` on its outcome. The study's attributes are read at the first trial only."""

    def __init__(self) -> None:
        self._study_attrs: dict[str, Any] | None = None
        self._remembered: dict[str, float] = {}

    def prepare(
        self, request: TrialRequest, study: optuna.Study, trials: Sequence[FrozenTrial]
    ) -> tuple[TrialRequest, str, int | None]:
        """``request`` with an earlier trial's figure when one of ``trials`` measured the same
        input key; that key; and the trial it came from (``None``: the child measures it)."""
        if self._study_attrs is None:
            self._study_attrs = dict(storage_call(study, decode_study, study).flat)
        key = input_key(request, self._study_attrs)
        # Else a figure measured by a run that is no trial: no number to name.
        figure, number = find_input(trials, key) or (self._remembered.get(key), None)
        if figure is None:
            return request, key, None
        return replace(request, input_throughput=figure), key, number

    def remember(self, outcome: TrialOutcome, key: str) -> None:
        """Keep the figure of a run that is no trial (a seed run), for the next run of ``key``."""
        figure = outcome.attrs.get("input_throughput")
        if key not in self._remembered and isinstance(figure, int | float) and figure > 0:
            self._remembered[key] = float(figure)

    @staticmethod
    def record(outcome: TrialOutcome, key: str, source: int | None) -> TrialOutcome:
        """``outcome`` with its input key and, for a reused figure, the trial that measured it."""
        if outcome.attrs.get("input_throughput") is None:
            return outcome
        attrs = {**outcome.attrs, INPUT_KEY: key}
        if source is not None:
            attrs[REUSED_FROM] = source
        return replace(outcome, attrs=attrs)
