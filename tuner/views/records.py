"""A study's trials for machines, pure: one record a trial, as JSON or CSV."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable
from typing import Any

from optuna.trial import FrozenTrial

from tuner.core.configurations import status_of
from tuner.core.record import decode
from tuner.views.summary import VALUES, measured

RECORD_FIELDS = [
    "number",
    "state",
    "status",
    "global_batch_size",
    "per_replica_batch_size",
    "num_replicas",
    "lr_rule",
    "precision",
    "learning_rate",
    "throughput",
    "throughput_ci",
    "repeats",
    "final_loss",
    "train_loss",
    "val_metrics",
    "reached_target",
    "samples_to_target",
    "time_to_target_s",
    "time_to_target_ci",
    "gradient_noise_scale",
    "goodput",
    "model_hyperparameters",
    "host",
    "same_as",
    "repeat_of",
    "error",
]
"""The keys of :func:`trial_record`, in order: the names the trial stores."""


def trial_record(trial: FrozenTrial) -> dict[str, Any]:
    """One trial for machines: :data:`RECORD_FIELDS` at full precision (``None``: missing)."""
    attrs = decode(trial).flat
    record: dict[str, Any] = {"number": trial.number, "state": trial.state.name}
    record["status"] = status_of(trial)
    for key in RECORD_FIELDS[3:]:
        value = measured(trial, key) if key in VALUES else attrs.get(key, trial.params.get(key))
        if isinstance(value, float) and not math.isfinite(value):
            value = None
        record[key] = value
    return record


def records_text(trials: Iterable[FrozenTrial], kind: str) -> str:
    """The trials' :func:`trial_record` by number, as ``json`` or ``csv``."""
    records = [trial_record(t) for t in sorted(trials, key=lambda t: t.number)]
    if kind == "json":
        return json.dumps(records, indent=2) + "\n"
    page = io.StringIO()
    writer = csv.writer(page, lineterminator="\n")
    writer.writerow(RECORD_FIELDS)
    for record in records:
        writer.writerow([_csv_cell(record[key]) for key in RECORD_FIELDS])
    return page.getvalue()


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    return json.dumps(value) if isinstance(value, dict | list) else value
