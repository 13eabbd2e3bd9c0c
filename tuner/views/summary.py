"""What every view of a study says, as plain strings: the terminal tables, the dashboard note and
the HTML report all render these rows, so the three never disagree.

Pure: ``FrozenTrial`` objects and the recommendation dict in, strings out.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable
from typing import Any

from optuna.trial import FrozenTrial

from tuner.core.outcome import STATES
from tuner.core.recommend import status_of
from tuner.views.columns import Layout, fit_columns

TRIAL_COLUMNS: list[tuple[str, str]] = [
    ("#", "right"),
    ("state", "left"),
    ("status", "left"),
    ("global batch", "right"),
    ("per replica", "right"),
    ("replicas", "right"),
    ("rule", "left"),
    ("LR", "right"),
    ("samples/s", "right"),
    ("final loss", "right"),
    ("train loss", "right"),
    ("B_noise", "right"),
    ("goodput", "right"),
    ("model", "left"),
    ("host", "left"),
    ("note", "left"),
]
"""Header and alignment of each cell of :func:`trial_cells`."""

STATUS_COLUMN = [header for header, _ in TRIAL_COLUMNS].index("status")

TRIAL_PRIORITY = [
    "#",
    "status",
    "global batch",
    "per replica",
    "rule",
    "LR",
    "samples/s",
    "final loss",
    "model",
    "note",
    "train loss",
    "goodput",
    "B_noise",
    "replicas",
    "host",
    "state",
]
"""The order in which the columns of a narrow trials table are given room (``#`` and ``status``
are always shown)."""

TRIAL_WRAPPING = frozenset({"model", "host", "note"})
"""The trials table's free-text columns: the only ones that may wrap; every other cell is one
word (a number, a status, a rule) and is shown whole or not at all."""

RECORD_FIELDS = [
    "number",
    "state",
    "status",
    "global_batch_size",
    "per_replica_batch_size",
    "num_replicas",
    "lr_rule",
    "learning_rate",
    "throughput",
    "final_loss",
    "train_loss",
    "gradient_noise_scale",
    "goodput",
    "model_hyperparameters",
    "host",
    "error",
]
"""The keys of :func:`trial_record`, in order: the names the trial stores."""


def fmt(value: Any, spec: str) -> str:
    """``format(value, spec)``, or ``-`` for a missing or NaN value."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    try:
        return format(value, spec)
    except (TypeError, ValueError):
        return str(value)


def trial_cells(trial: FrozenTrial, note_width: int = 60) -> list[str]:
    """One row of the trials table, in :data:`TRIAL_COLUMNS` order."""
    attrs = trial.user_attrs
    return [
        str(trial.number),
        trial.state.name,
        status_of(trial),
        fmt(attrs.get("global_batch_size", trial.params.get("global_batch_size")), "d"),
        fmt(attrs.get("per_replica_batch_size"), "d"),
        fmt(attrs.get("num_replicas"), "d"),
        str(attrs.get("lr_rule", trial.params.get("lr_rule", "-"))),
        fmt(attrs.get("learning_rate"), ".3g"),
        fmt(measured(trial, "throughput"), ",.0f"),
        fmt(measured(trial, "final_loss"), ".4g"),
        fmt(attrs.get("train_loss"), ".4g"),
        fmt(attrs.get("gradient_noise_scale"), ",.0f"),
        fmt(attrs.get("goodput"), ",.0f"),
        model_text(attrs.get("model_hyperparameters")),
        str(attrs.get("host", "-")),
        str(attrs.get("error", ""))[:note_width],
    ]


_VALUES = {"final_loss": 0, "throughput": 1}
"""Where the study's values hold the two measured attributes."""


def measured(trial: FrozenTrial, key: str) -> Any:
    """``final_loss`` or ``throughput`` as the trial stored it (its user attribute, else its
    value), or ``None``."""
    value = trial.user_attrs.get(key)
    if value is None and trial.values is not None and len(trial.values) > _VALUES[key]:
        value = trial.values[_VALUES[key]]
    return value


def trial_layout(rows: list[list[str]], width: int, wide: bool = False) -> Layout:
    """The columns of the trials table (rows of :func:`trial_rows`) that fit ``width``: see
    :func:`tuner.views.columns.fit_columns`. ``state`` is left out where ``status`` implies it."""
    headers = [header for header, _ in TRIAL_COLUMNS]
    drop = [] if _state_matters(rows) else ["state"]
    return fit_columns(
        headers, rows, width, TRIAL_PRIORITY, TRIAL_WRAPPING, ("#", "status"), drop, wide
    )


def _state_matters(rows: list[list[str]]) -> bool:
    """Whether some row's Optuna state is not the one its status ends in."""
    state = [header for header, _ in TRIAL_COLUMNS].index("state")
    expected = {**STATES, "running": "RUNNING"}
    return any(expected.get(row[STATUS_COLUMN]) != row[state] for row in rows)


def trial_record(trial: FrozenTrial) -> dict[str, Any]:
    """One trial for machines: :data:`RECORD_FIELDS` as stored (full precision; ``None`` for a
    missing or non-finite number)."""
    attrs = trial.user_attrs
    record: dict[str, Any] = {"number": trial.number, "state": trial.state.name}
    record["status"] = status_of(trial)
    for key in RECORD_FIELDS[3:]:
        value = measured(trial, key) if key in _VALUES else attrs.get(key, trial.params.get(key))
        if isinstance(value, float) and not math.isfinite(value):
            value = None
        record[key] = value
    return record


def records_text(trials: Iterable[FrozenTrial], kind: str) -> str:
    """The trials' :func:`trial_record` by trial number, as ``json`` (a list of objects) or
    ``csv`` (a header of :data:`RECORD_FIELDS`, then one row a trial; an empty cell for a missing
    value, a dict as JSON)."""
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


def model_text(values: dict[str, Any] | None) -> str:
    """A hypermodel's values as ``units=64 dropout=0.1`` (``-`` for a plain model)."""
    if not values:
        return "-"
    return " ".join(
        f"{k}={format(v, '.3g') if isinstance(v, float) else v}" for k, v in values.items()
    )


def trial_rows(trials: Iterable[FrozenTrial], note_width: int = 60) -> list[list[str]]:
    """:func:`trial_cells` of each trial, by trial number."""
    return [trial_cells(t, note_width) for t in sorted(trials, key=lambda t: t.number)]


def recommendation_rows(rec: dict[str, Any]) -> list[tuple[str, str]]:
    """The recommendation as (label, text) pairs."""
    rows = [
        (
            "global batch size",
            f"{rec['global_batch_size']} ({rec['per_replica_batch_size']} per "
            f"replica × {rec['num_replicas']})",
        ),
        (
            "learning rate",
            f"{rec['learning_rate']:.4g} (rule {rec['lr_rule']}, base "
            f"{rec['base_lr']:.4g} at batch {rec['base_batch_size']})",
        ),
        ("throughput", f"{rec['throughput']:,.0f} samples/s"),
        ("final loss", f"{rec['final_loss']:.5g}"),
        ("largest feasible batch", str(rec["largest_feasible_batch_size"])),
        ("out-of-memory sizes", ", ".join(map(str, rec["oom_batch_sizes"])) or "none"),
        (
            "trial",
            f"#{rec['trial_number']} ({rec['policy']}, loss tolerance {rec['loss_tolerance']:.0%})",
        ),
    ]
    if rec.get("statistical_efficiency") is not None:
        rows.append(("statistical efficiency", efficiency_text(rec)))
    if rec.get("input_throughput"):
        rows.append(("input pipeline", input_text(rec)))
    if rec.get("speedup_vs_single_device"):
        rows.append(
            (
                "vs one device",
                f"{rec['speedup_vs_single_device']:.2f}× the single-device baseline "
                f"({rec['baseline_throughput']:,.0f} samples/s at batch {rec['base_batch_size']}); "
                f"scaling efficiency {rec['scaling_efficiency']:.2f}",
            )
        )
    if rec.get("probe"):
        probe = rec["probe"]
        rows.append(
            (
                "probe",
                f"largest fitting batch {probe['largest_fitting_batch']}, out of memory at "
                f"{probe['smallest_oom_batch'] or 'none up to the training set'} "
                f"({probe['launches']} launches)",
            )
        )
    if rec.get("note"):
        rows.append(("note", rec["note"]))
    return rows


def input_text(rec: dict[str, Any]) -> str:
    """What the input pipeline delivers alone, and what it means when training keeps up with it."""
    share = rec["throughput"] / rec["input_throughput"]
    alone = f"{rec['input_throughput']:,.0f} samples/s alone; training runs at {share:.0%} of it"
    if not rec.get("input_bound"):
        return f"{alone}: not input-bound"
    return (
        f"{alone}: INPUT-BOUND — a faster pipeline (more parallel reads, cache, prefetch, fewer "
        "Python ops) would raise the throughput, not a different batch"
    )


def efficiency_text(rec: dict[str, Any]) -> str:
    """The noise scale, the critical batch it estimates, efficiency and goodput, in one line."""
    noise = rec["gradient_noise_scale"]
    return (
        f"gradient noise scale B_noise {noise:,.0f} (critical batch ≈ B_noise = {noise:,.0f}: "
        "the simple noise scale of McCandlish et al. 2018); efficiency "
        f"{rec['statistical_efficiency']:.2f} vs batch {rec['base_batch_size']}, goodput "
        f"{rec['goodput']:,.0f} samples/s"
    )


def short_device(name: str) -> str:
    """``/job:localhost/replica:0/task:0/device:GPU:1`` or ``/gpu:1`` -> ``GPU:1``."""
    tail = name.rsplit("device:", 1)[-1].lstrip("/")
    kind, _, index = tail.partition(":")
    return f"{kind.upper()}:{index}" if index else tail


def environment_rows(
    study_attrs: dict[str, Any], trials: Iterable[FrozenTrial]
) -> list[tuple[str, str]]:
    """Devices and versions of a study, as (label, text) pairs."""
    signatures = list(study_attrs.get("device_signatures", []))
    devices = sorted(
        {
            ", ".join(short_device(d) for d in t.user_attrs["devices"])
            for t in trials
            if t.user_attrs.get("devices")
        }
    )
    versions = study_attrs.get("versions", {})
    workload = study_attrs.get("workload", {})
    spec = study_attrs.get("spec", {})
    rows = [
        ("devices", "; ".join(signatures) or "-"),
        ("replica devices", "; ".join(devices) or "-"),
        ("versions", ", ".join(f"{k} {v}" for k, v in sorted(versions.items())) or "-"),
    ]
    if workload:
        rows.append(
            (
                "workload",
                f"{spec.get('workload', {}).get('model', '?')} on "
                f"{workload.get('n_train', '?')} training samples, "
                f"{fmt(workload.get('parameters'), ',d')} parameters",
            )
        )
    return rows
