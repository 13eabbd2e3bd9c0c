"""From trials to a recommendation, and the recommended-config JSON (pure).

The pipeline: ``_candidates`` (the configurations within the loss tolerance, and the policy's
pick among them), ``_ties`` (the pick by the ratio of the values: the tie margin and the close
calls), ``_policy`` (the policies, the tolerance and the tie margin), ``_verdict`` (the speedup over
one device), ``_law`` (the measured learning-rate law, and each batch's points for the adaptive
sweep), ``_fields`` (the fields of one device signature's recommendation), ``_pipeline``
(:func:`recommend`, which ties them together) and ``_export`` (the JSON a training script reads).

The names load on first use: the spec and the CLI need only the light ``_policy`` names, and
the rest import Optuna.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tuner.core.recommend._candidates import candidate_entries, higher_is_better
    from tuner.core.recommend._export import SCHEMA_VERSION, export_document
    from tuner.core.recommend._law import batch_points, seed_sigma
    from tuner.core.recommend._pipeline import recommend
    from tuner.core.recommend._policy import (
        DEFAULT_TIE_MARGIN,
        DEFAULT_TOLERANCE,
        POLICIES,
        POLICY,
        default_policy,
    )
    from tuner.core.recommend._verdict import baseline_at, baseline_key

_EXPORTS = {
    "DEFAULT_TIE_MARGIN": "_policy",
    "DEFAULT_TOLERANCE": "_policy",
    "POLICIES": "_policy",
    "POLICY": "_policy",
    "SCHEMA_VERSION": "_export",
    "baseline_at": "_verdict",
    "baseline_key": "_verdict",
    "batch_points": "_law",
    "candidate_entries": "_candidates",
    "default_policy": "_policy",
    "export_document": "_export",
    "higher_is_better": "_candidates",
    "recommend": "_pipeline",
    "seed_sigma": "_law",
}

__all__ = [
    "DEFAULT_TIE_MARGIN",
    "DEFAULT_TOLERANCE",
    "POLICIES",
    "POLICY",
    "SCHEMA_VERSION",
    "baseline_at",
    "baseline_key",
    "batch_points",
    "candidate_entries",
    "default_policy",
    "export_document",
    "higher_is_better",
    "recommend",
    "seed_sigma",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
