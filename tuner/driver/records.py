"""Study records kept per device signature: what a probe, the seed runs (and, by their own key,
the baselines) found on one set of devices, stored as study user attributes."""

from __future__ import annotations

from typing import Any

import optuna

from tuner.core.devices import DevicePlan
from tuner.storage.guarded import storage_call


def store(study: optuna.Study, attr: str, plan: DevicePlan, record: dict[str, Any]) -> None:
    """Set ``study.user_attrs[attr][signature] = record`` for ``plan``'s device signature."""
    storage_call(study, _store, study, attr, plan, record)


def _store(study: optuna.Study, attr: str, plan: DevicePlan, record: dict[str, Any]) -> None:
    records = dict(study.user_attrs.get(attr, {}))
    records[plan.device_signature] = record
    study.set_user_attr(attr, records)
