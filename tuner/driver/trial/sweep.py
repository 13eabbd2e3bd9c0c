"""The adaptive LR sweep at the driver's edge: whether a sweep trial about to start is trained,
or ends ``bracketed`` without a child (:mod:`tuner.core.adaptive_sweep` decides, from what has
finished at its batch when it starts).

With several workers, a trial still running elsewhere says nothing yet: only finished trials
count, as the law's fit counts them (:func:`tuner.core.recommend.batch_points`: a rate stopped
early as dominated by the best at its own batch is worse; a diverged one too).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from optuna.trial import FrozenTrial

from tuner.core.adaptive_sweep import SKIPPED, bracketed
from tuner.core.configurations import PRECISION, model_config, precision_of
from tuner.core.hyperparams import config_key
from tuner.core.outcome import TrialOutcome
from tuner.core.recommend import batch_points, seed_sigma
from tuner.core.record import decode
from tuner.core.scaling import is_sweep, scaled_learning_rate
from tuner.core.spec import StudySpec


def adaptive(spec: StudySpec) -> bool:
    """Whether the study's LR sweep skips the rates that cannot be the best (``lr_sweep`` on,
    ``lr_sweep_full`` off)."""
    return bool(spec.search.sweep.rates) and not spec.search.sweep.full


def skip_bracketed(
    spec: StudySpec,
    attrs: Mapping[str, Any],
    trials: Sequence[FrozenTrial],
    seed_records: Callable[[], Mapping[str, Any] | None],
) -> TrialOutcome | None:
    """``bracketed`` (PRUNED, not launched) when the sweep trial configured by ``attrs`` need not
    be trained, from the study's ``trials`` as it starts; ``None``: train it. ``seed_records``
    (the study's seed noise by device signature) is read only for a rate the bracket would skip:
    without the seed noise the fit needs more points around the best."""
    rule = str(attrs["lr_rule"])
    if not adaptive(spec) or not is_sweep(rule):
        return None
    search, batch = spec.search, int(attrs["global_batch_size"])
    signature = attrs["device_signature"]
    config = config_key(attrs.get("model_hyperparameters") or {})
    mine = [
        t
        for t in trials
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
    record = (seed_records() or {}).get(signature)
    sigma = seed_sigma(record)
    reason = bracketed(lr, points, worse, seed_noise=bool(sigma), planned=planned)
    return None if reason is None else TrialOutcome(SKIPPED, error=reason)
