"""The pre-launch rules: the one ordered list (:data:`RULES`, walked by :func:`before_launch`)
that decides, before any child starts, whether a grid trial ends without one, and how; the first
rule that answers wins (the order: docs/design/architecture.md, "One trial, in order").
``bracketed`` goes before ``oom-implied``: a batch reached only by accumulation skips its rates
too, and a batch that ran out of memory has nothing finished, so it never skips there.

Not rules: the budget, the early stop and the input pipeline's figure. With several workers only
finished trials count, as :func:`tuner.core.recommend.batch_points` counts them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from optuna.trial import FrozenTrial

from tuner.core.adaptive_sweep import SKIPPED, bracketed
from tuner.core.configurations import (
    PRECISION,
    failed_batch,
    model_config,
    precision_of,
    smallest_oom_batch,
)
from tuner.core.hyperparams import config_key
from tuner.core.outcome import TrialOutcome
from tuner.core.recommend import batch_points, seed_sigma
from tuner.core.record import decode
from tuner.core.scaling import is_sweep, scaled_learning_rate
from tuner.core.spec import StudySpec
from tuner.driver.children import first_precision
from tuner.driver.decide.racing import REPEAT_INDEX, REPEAT_OF, SAME_AS, is_original


@dataclass(frozen=True)
class Point:
    """A grid trial about to start, and what the rules read to decide it: ``stored`` is the
    study's trials as it started, ``earlier`` its configuration's runs before it when it is a
    repeat, ``seed_noise`` the study's by device signature (read only when a rule needs it)."""

    spec: StudySpec
    number: int
    position: int
    total: int
    attrs: dict[str, Any]
    stored: Sequence[FrozenTrial]
    earlier: Sequence[FrozenTrial]
    repeat: bool
    probed_oom: int | None
    seed_noise: Callable[[], Mapping[str, Any] | None]


@dataclass(frozen=True)
class Rule:
    """One pre-launch rule: ``decide`` gives its outcome for a point it answers, else ``None``. A
    ``final`` rule's outcome is the trial's as it stands: the trial is not shown as started and
    nothing after the launch touches it; ``line`` is what the search prints then."""

    name: str
    question: str
    gives: str
    decide: Callable[[Point], TrialOutcome | None]
    final: bool = False
    line: Callable[[Point, TrialOutcome], str] | None = None


@dataclass(frozen=True)
class Decided:
    """What :func:`before_launch` found: the rule that answered, and the outcome it gave."""

    rule: Rule
    outcome: TrialOutcome


def before_launch(point: Point, rules: Sequence[Rule] | None = None) -> Decided | None:
    """The one place a trial's outcome is decided before a child starts: the first of ``rules``
    (default :data:`RULES`, in order) that answers ``point``; ``None``: no rule does, train it."""
    for rule in RULES if rules is None else rules:
        outcome = rule.decide(point)
        if outcome is not None:
            return Decided(rule, outcome)
    return None


NOT_MEASURED = frozenset(
    {"status", "error", "final_loss", "throughput", "timings", "training_key", SAME_AS, REPEAT_OF,
     REPEAT_INDEX, "early_stop_skipped"}
)  # fmt: skip
"""Attributes a ``same_as`` trial does not take from its original: its outcome (set from the
values), the original's own child timings (no child ran for it) and the bookkeeping."""


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


def _same_training(point: Point) -> TrialOutcome | None:
    """``same_as`` the first measured grid trial (no ``same_as``, no repeat) that trains exactly
    like this one; a repeat always runs, and so does a trial whose original still runs."""
    if point.repeat:
        return None
    key = point.attrs["training_key"]
    same = [
        t
        for t in point.stored
        # The key first: a cheap test that rules out nearly every trial of a large study.
        if decode(t).configuration.training_key == key
        and t.number != point.number
        and is_original(t)
    ]
    return same_as(min(same, key=lambda t: t.number), point.attrs) if same else None


def _same_training_line(point: Point, outcome: TrialOutcome) -> str:
    original = outcome.attrs[SAME_AS]
    return (
        f"trial {point.number}: same training as #{original} (same batch, learning rate and "
        f"optimizer settings): not trained again, #{original}'s values recorded "
        f"({point.position} of {point.total})"
    )


def adaptive(spec: StudySpec) -> bool:
    """Whether the study's LR sweep skips the rates that cannot be the best (``lr_sweep`` on,
    ``lr_sweep_full`` off)."""
    return bool(spec.search.sweep.rates) and not spec.search.sweep.full


def _bracketed(point: Point) -> TrialOutcome | None:
    """``bracketed`` (PRUNED, not launched) when this LR-sweep rate cannot be the best at its
    batch, from what had finished there when it started (:mod:`tuner.core.adaptive_sweep`); a
    repeat always runs. The seed noise is read only for a rate the bracket would skip: without
    it the fit needs more points around the best."""
    spec, attrs = point.spec, point.attrs
    rule = str(attrs["lr_rule"])
    if point.earlier or not adaptive(spec) or not is_sweep(rule):
        return None
    search, batch = spec.search, int(attrs["global_batch_size"])
    signature = attrs["device_signature"]
    config = config_key(attrs.get("model_hyperparameters") or {})
    mine = [
        t
        for t in point.stored
        if decode(t).configuration.device_signature == signature
        and precision_of(t) == attrs[PRECISION]
        and model_config(t) == config
    ]
    points, worse, _ = batch_points(mine).get(batch, ([], [], ""))
    planned = [
        scaled_learning_rate(r, search.grid.base_lr, batch, search.grid.base_batch_size)
        for r in search.grid_rules
    ]
    lr = float(attrs["learning_rate"])
    if bracketed(lr, points, worse, planned=planned) is None:  # the least it needs: train
        return None
    sigma = seed_sigma((point.seed_noise() or {}).get(signature))
    reason = bracketed(lr, points, worse, seed_noise=bool(sigma), planned=planned)
    return None if reason is None else TrialOutcome(SKIPPED, error=reason)


def _implied_oom(point: Point) -> TrialOutcome | None:
    """``oom-implied`` when a smaller or equal batch already ran out of memory (with the same
    model configuration and precision on the same devices) or the probe (which ran at the
    spec's first precision) found it would; else ``None``."""
    attrs = point.attrs
    batch, precision = int(attrs["global_batch_size"]), str(attrs[PRECISION])
    signature = str(attrs["device_signature"])
    values = attrs.get("model_hyperparameters")
    # Out-of-memory is monotone in the batch for one model configuration at one precision on
    # one signature; a mixed precision halves the activations, so it says nothing across.
    oom_at = smallest_oom_batch(point.stored, signature, config_key(values or {}), precision)
    if oom_at is not None and batch >= oom_at:
        same_model = " with these model hyperparameters" if values else ""
        at = f" at {precision}" if len(point.spec.search.grid.precisions) > 1 else ""
        return TrialOutcome(
            "oom-implied",
            error=f"global batch {oom_at} already ran out of memory{at} on {signature}{same_model}",
        )
    probe = point.probed_oom
    if probe is not None and batch >= probe and precision == first_precision(point.spec):
        return TrialOutcome(
            "oom-implied",
            error=f"the probe found global batch {probe} out of memory on {signature}",
        )
    return None


def _batch_failed(point: Point) -> TrialOutcome | None:
    """``batch-failed`` when two rules at this batch already failed with the same error (on the
    same devices, model configuration and precision): the batch fails, not the rate, so its
    other rates are not launched and the search goes on at the other batches."""
    attrs = point.attrs
    found = failed_batch(
        point.stored,
        int(attrs["global_batch_size"]),
        str(attrs["device_signature"]),
        config_key(attrs.get("model_hyperparameters") or {}),
        str(attrs[PRECISION]),
    )
    if found is None:
        return None
    numbers, error = found
    trials = " and ".join(f"#{n}" for n in numbers[:2])
    return TrialOutcome(
        "batch-failed",
        error=f"trials {trials} at this batch failed with the same error under two rules: "
        f"{error[:300]}",
    )


RULES: tuple[Rule, ...] = (
    Rule(
        "same-training",
        "does a measured trial already train exactly like this one (its training key)?",
        "COMPLETE ok with that trial's values, same_as its number; no child",
        _same_training,
        final=True,
        line=_same_training_line,
    ),
    Rule(
        "bracketed",
        "is this adaptive LR-sweep rate past a worse rate than the best at its batch?",
        "PRUNED bracketed; no child",
        _bracketed,
    ),
    Rule(
        "oom-implied",
        "did a smaller or equal batch run out of memory here, or the probe say it would?",
        "PRUNED oom-implied; no child (unless accumulation reaches it in micro-steps)",
        _implied_oom,
    ),
    Rule(
        "batch-failed",
        "did two rules at this batch already fail with the same error?",
        "PRUNED batch-failed; no child",
        _batch_failed,
    ),
)
"""The pre-launch rules, in the order they are asked (the module's docstring says why)."""
