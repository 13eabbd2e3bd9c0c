"""From trials to a recommendation, and the recommended-config JSON (pure).

The policies, the tolerance and the tie margin are here; the other names load on first use: the
spec and the CLI need only the light policy names, and the rest import Optuna.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tuner.core.recommend._candidates import candidate_entries as candidate_entries
    from tuner.core.recommend._candidates import higher_is_better as higher_is_better
    from tuner.core.recommend._export import SCHEMA_VERSION as SCHEMA_VERSION
    from tuner.core.recommend._export import export_document as export_document
    from tuner.core.recommend._law import batch_points as batch_points
    from tuner.core.recommend._law import seed_sigma as seed_sigma
    from tuner.core.recommend._pipeline import recommend as recommend
    from tuner.core.recommend._verdict import baseline_at as baseline_at
    from tuner.core.recommend._verdict import baseline_key as baseline_key

DEFAULT_TOLERANCE = 0.02
"""A configuration whose final loss is within this relative margin of the best counts as as good
(raised to twice the measured seed-to-seed spread when that is larger)."""
POLICY = "loss-then-throughput"
"""The policy without a target loss: the fastest of the configurations within the tolerance of
the best loss (at one global batch, where speeds differ only by noise, the lowest loss)."""
GOODPUT = "goodput"
"""Among the same candidates, the highest goodput (throughput × statistical efficiency)."""
TIME_TO_TARGET = "time-to-target"
"""Among the configurations that reached the target loss, the shortest training time to it."""
POLICIES = (POLICY, GOODPUT, TIME_TO_TARGET)


def default_policy(target_loss: float | None) -> str:
    """``time-to-target`` when a target loss is given, else ``loss-then-throughput``."""
    return POLICY if target_loss is None else TIME_TO_TARGET


DEFAULT_TIE_MARGIN = 0.05
"""Candidates within this relative margin of the best value are equally good in practice (the
best's throughput ratio over them at most 1.05): the smallest global batch of them is picked."""


_EXPORTS = {
    "SCHEMA_VERSION": "_export",
    "baseline_at": "_verdict",
    "baseline_key": "_verdict",
    "batch_points": "_law",
    "candidate_entries": "_candidates",
    "export_document": "_export",
    "higher_is_better": "_candidates",
    "recommend": "_pipeline",
    "seed_sigma": "_law",
}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
