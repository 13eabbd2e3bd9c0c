"""The spec fields that say how sure a decision must be: seeds that measure the loss's noise,
repeats that race close candidates, the loss tolerance, and a loss target with its cadence."""

from __future__ import annotations

import math
from typing import Any

from tuner.core.errors import ConfigError
from tuner.core.options import DEFAULT_HEARTBEAT_S, DEFAULT_STORAGE_WAIT_S, named
from tuner.core.recommend import DEFAULT_TIE_MARGIN, DEFAULT_TOLERANCE
from tuner.core.spec import _fields as fields
from tuner.core.spec._fields import Table

DEFAULT_SEEDS = 3
"""The base configuration's runs with different seeds (the grid's own run included)."""
DEFAULT_MAX_REPEATS = 3
"""The most runs racing gives one close candidate."""


def decision_fields(search: Table) -> dict[str, Any]:
    """How sure a decision must be: seeds, repeats, loss tolerance, and a loss target."""
    target = search.get("target_loss")
    decision = {
        "seeds": fields.positive_int(search.get("seeds", DEFAULT_SEEDS), search.label("seeds")),
        "max_repeats": fields.positive_int(
            search.get("max_repeats", DEFAULT_MAX_REPEATS), search.label("max_repeats")
        ),
        "tolerance": fields.fraction(
            search.get("tolerance", DEFAULT_TOLERANCE), search.label("tolerance")
        ),
        "tie_margin": fields.fraction(
            search.get("tie_margin", DEFAULT_TIE_MARGIN), search.label("tie_margin")
        ),
        "target_loss": None
        if target is None
        else fields.finite(target, search.label("target_loss")),
        "eval_every_samples": search.optional_positive_int("eval_every_samples"),
        "early_stop": _switch(search, "early_stop", True),
        "lr_sweep_full": _switch(search, "lr_sweep_full", False),
        "budget": fields.duration(search.get("budget"), search.label("budget")),
        **{key: _seconds(search, key, default) for key, default in _WAITS.items()},
    }
    if decision["eval_every_samples"] is not None and target is None:
        raise ConfigError(
            f"{search.label('eval_every_samples')} sets how often the loss target is checked; "
            f"give a target_loss ({named('target_loss')}) too, or drop it"
        )
    return decision


_WAITS = {"heartbeat": DEFAULT_HEARTBEAT_S, "storage_wait": DEFAULT_STORAGE_WAIT_S}
"""How the search meets its storage: seconds between heartbeats, and waited for an outage."""


def _seconds(search: Table, key: str, default: float) -> float:
    """0 (off, or no wait) or a positive number of seconds."""
    value = search.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise ConfigError(f"{search.label(key)} must be 0 or a positive number of seconds")
    if not math.isfinite(value):
        raise ConfigError(f"{search.label(key)} must be 0 or a positive number of seconds")
    return float(value)


def _switch(search: Table, key: str, default: bool) -> bool:
    value = search.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"{search.label(key)} must be true or false")
    return value
