"""Study records kept per device signature: what a probe, the seed runs (and, by their own key,
the baselines) found on one set of devices, stored as study user attributes."""

from __future__ import annotations

from typing import Any

import optuna

from tuner.core.devices import DevicePlan
from tuner.core.record import decode_study, store_study
from tuner.storage.guarded import storage_call


def store(study: optuna.Study, attr: str, plan: DevicePlan, record: dict[str, Any]) -> None:
    """Set the study attribute ``attr``'s record for ``plan``'s device signature to ``record``
    (one storage step: read and written again whole after an outage)."""
    storage_call(study, _store, study, attr, plan, record)


def _store(study: optuna.Study, attr: str, plan: DevicePlan, record: dict[str, Any]) -> None:
    records = dict(decode_study(study).flat.get(attr, {}))
    records[plan.device_signature] = record
    store_study(study, attr, records)
