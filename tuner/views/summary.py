"""What every view of a study says, as plain strings: the terminal tables, the dashboard note and
the HTML report all render these rows, so the three never disagree.

Pure: ``FrozenTrial`` objects and the recommendation dict in, strings out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from optuna.trial import FrozenTrial

from tuner.core.recommend import status_of

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
        fmt(attrs.get("throughput"), ",.0f"),
        fmt(attrs.get("final_loss"), ".4g"),
        fmt(attrs.get("train_loss"), ".4g"),
        fmt(attrs.get("gradient_noise_scale"), ",.0f"),
        fmt(attrs.get("goodput"), ",.0f"),
        model_text(attrs.get("model_hyperparameters")),
        str(attrs.get("host", "-")),
        str(attrs.get("error", ""))[:note_width],
    ]


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
