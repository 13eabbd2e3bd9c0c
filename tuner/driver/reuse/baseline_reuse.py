"""Reusing a single-device baseline that another study in the same storage measured.

The baseline trains the base configuration on one device ``max_repeats`` times; two studies of
the same workload on the same machine would measure exactly the same runs again. So every stored
baseline carries its **reuse key** (:func:`tuner.driver.reuse.keys.reuse_key`), and a study with
no baseline of its own copies the newest record with the same key and at least as many runs
(:func:`find_baseline`), naming the study it came from (``reused_from``).
"""

from __future__ import annotations

from typing import Any

import optuna

from tuner.core.record import decode_study
from tuner.storage.guarded import storage_call


def find_baseline(study: optuna.Study, key: str, repeats: int) -> tuple[str, dict[str, Any]] | None:
    """The newest baseline another study in ``study``'s storage stored under ``key`` with at
    least ``repeats`` runs, as ``(the study that measured it, the record)``; ``None`` if none."""
    # Optuna has no public handle on a study's storage; the views read it the same way.
    found = [
        (str(record.get("reused_from") or other.study_name), record)
        for other in storage_call(study, study._storage.get_all_studies)
        if other.study_name != study.study_name
        for record in (decode_study(other).baselines or {}).values()
        if _matches(record, key, repeats)
    ]
    return max(found, key=lambda pair: str(pair[1].get("measured_at", ""))) if found else None


def _matches(record: Any, key: str, repeats: int) -> bool:
    return (
        isinstance(record, dict)
        and record.get("reuse_key") == key
        and record.get("status") == "ok"
        and len(record.get("repeats") or ()) >= repeats
    )
