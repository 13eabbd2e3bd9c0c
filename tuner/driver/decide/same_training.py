"""Trainings that are one and the same: a run's training key (everything that decides what it
trains and measures), and the grid trial that already trained like a new one, whose measurement
the new one takes instead of training again (``same_as``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from optuna.trial import FrozenTrial

from tuner.core.devices import DevicePlan
from tuner.core.outcome import TrialOutcome
from tuner.core.record import decode
from tuner.core.sameness import training_key
from tuner.core.spec import StudySpec
from tuner.driver.children import budget_dict, first_precision
from tuner.driver.decide.racing import REPEAT_INDEX, REPEAT_OF, SAME_AS, is_original


def trial_training_key(
    spec: StudySpec,
    plan: DevicePlan,
    batch: int,
    rule: str,
    values: dict[str, Any] | None,
    precision: str | None = None,
) -> str:
    """The :func:`tuner.core.sameness.training_key` of a run of ``spec`` on ``plan`` (at
    ``precision``, default the spec's first)."""
    search = spec.search
    budget = {
        **budget_dict(spec),
        "target_loss": search.target_loss,
        "eval_every_samples": search.eval_every_samples,
        "noise_scale": search.noise_scale,
        "noise_scale_steps": search.noise_scale_steps,
    }
    return training_key(
        global_batch_size=batch,
        lr_rule=rule,
        base_lr=search.base_lr,
        base_batch_size=search.base_batch_size,
        seed=search.seed,
        loop=search.loop_kind,
        device_signature=plan.device_signature,
        budget=budget,
        warmup_steps=search.warmup_steps,
        warmup_epochs=search.warmup_epochs,
        model_hyperparameters=values,
        precision=precision or first_precision(spec),
    )


NOT_MEASURED = frozenset(
    {"status", "error", "final_loss", "throughput", "timings", "training_key", SAME_AS, REPEAT_OF,
     REPEAT_INDEX, "early_stop_skipped"}
)  # fmt: skip
"""Attributes a ``same_as`` trial does not take from its original: its outcome (set from the
values), the original's own child timings (no child ran for it) and the bookkeeping."""


def same_training(
    trials: Sequence[FrozenTrial], attrs: dict[str, Any], number: int
) -> FrozenTrial | None:
    """The first measured grid trial (COMPLETE ``ok``, neither ``same_as`` nor a repeat) that
    trains exactly as ``attrs`` say (``training_key``); ``None`` when there is none (an original
    still running on another worker does not count: this trial runs)."""
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
