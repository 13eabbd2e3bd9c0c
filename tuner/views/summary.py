"""What every view of a study says, as plain strings (pure): the terminal tables, the dashboard
note and the HTML report all render these rows, so the three never disagree."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from optuna.trial import FrozenTrial

from tuner.core.budget import BUDGET
from tuner.core.configurations import status_of
from tuner.core.outcome import STATES
from tuner.core.plan import MACHINE_LOAD, load_text
from tuner.core.progress import clipped
from tuner.core.record import decode
from tuner.views.columns import Layout, fit_columns
from tuner.views.recommendation import recommendation_rows as recommendation_rows
from tuner.views.recommendation import seconds_text, span_text
from tuner.views.runs import (
    each_run,
    interval,
    original_number,
    representative,
    run_count,
    run_numbers,
    runs_label,
    shown_measurement,
)

TRIAL_COLUMNS: list[tuple[str, str]] = [
    ("#", "right"),
    ("state", "left"),
    ("status", "left"),
    ("global batch", "right"),
    ("per replica", "right"),
    ("replicas", "right"),
    ("rule", "left"),
    ("precision", "left"),
    ("LR", "right"),
    ("samples/s", "right"),
    ("95 % CI", "right"),
    ("runs", "right"),
    ("final loss", "right"),
    ("to target", "right"),
    ("train loss", "right"),
    ("val metrics", "left"),
    ("B_noise", "right"),
    ("goodput", "right"),
    ("model", "left"),
    ("host", "left"),
    ("note", "left"),
]
"""Header and alignment of each cell of :func:`trial_cells`."""
HEADERS = [header for header, _ in TRIAL_COLUMNS]
STATUS_COLUMN = HEADERS.index("status")

TRIAL_PRIORITY = [
    "#",
    "status",
    "global batch",
    "rule",
    "precision",
    "LR",
    "samples/s",
    "final loss",
    "to target",
    "95 % CI",
    "runs",
    "per replica",
    "model",
    "val metrics",
    "note",
    "train loss",
    "goodput",
    "B_noise",
    "replicas",
    "host",
    "state",
]
"""The order in which the columns of a narrow trials table are given room (``#`` and ``status``
are always shown). The throughput's interval comes after the final loss, which a decision needs
more; ``per replica`` (global batch ÷ replicas) after both."""

TRIAL_WRAPPING = frozenset({"model", "val metrics", "host", "note"})
"""The trials table's free-text columns: the only ones that may wrap; every other cell is one
word (a number, a status, a rule) and is shown whole or not at all."""


def fmt(value: Any, spec: str) -> str:
    """``format(value, spec)``, or ``-`` for a missing or NaN value."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    try:
        return format(value, spec)
    except (TypeError, ValueError):
        return str(value)


def trial_cells(
    trial: FrozenTrial,
    note_width: int = 60,
    shown: FrozenTrial | None = None,
    runs: Sequence[int] = (),
) -> list[str]:
    """One row of the trials table; the measured cells are ``shown``'s
    (:func:`tuner.views.runs.shown_measurement`). ``runs``: the configuration's trials."""
    attrs = decode(trial).flat
    shown = shown or trial
    same = shown.number if shown is not trial else None
    return [
        str(trial.number),
        trial.state.name,
        status_of(trial),
        fmt(attrs.get("global_batch_size", trial.params.get("global_batch_size")), "d"),
        fmt(attrs.get("per_replica_batch_size"), "d"),
        fmt(attrs.get("num_replicas"), "d"),
        str(attrs.get("lr_rule", trial.params.get("lr_rule", "-"))),
        str(trial.params.get("precision") or attrs.get("precision") or "-"),
        fmt(attrs.get("learning_rate"), ".3g"),
        fmt(measured(shown, "throughput"), ",.0f"),
        span_text(interval(decode(shown).flat, "throughput_ci")),
        runs_text(trial, shown),
        fmt(measured(shown, "final_loss"), ".4g"),
        target_text(decode(shown).flat),
        fmt(attrs.get("train_loss"), ".4g"),
        metrics_text(attrs.get("val_metrics")),
        fmt(attrs.get("gradient_noise_scale"), ",.0f"),
        fmt(attrs.get("goodput"), ",.0f"),
        model_text(attrs.get("model_hyperparameters")),
        str(attrs.get("host", "-")),
        # At a word boundary with "…": a slice cut words and numbers ("vs 1.841e").
        clipped(note_text(attrs, same=same, runs=runs, number=trial.number), note_width),
    ]


def runs_text(trial: FrozenTrial, shown: FrozenTrial) -> str:
    """The runs cell: how many runs the row's numbers rest on, or for a ``same_as`` trial
    ``= #N``, the row whose measurement it shares (one measurement, not another one)."""
    if isinstance(decode(trial).reuse.same_as, int):
        return f"= #{shown.number if shown is not trial else decode(trial).reuse.same_as}"
    runs = run_count(shown)
    return "-" if runs is None else str(runs)


def note_text(
    attrs: dict[str, Any],
    same: int | None = None,
    runs: Sequence[int] = (),
    number: int | None = None,
) -> str:
    """The note of a trial's row: whose training it shares (``= #9 (same training)``), its
    configuration's runs and its error. With ``runs`` the representative lists them (``runs #0,
    #3, #9``) and another run names it (``run 2 of #9``), so one configuration is one number
    everywhere; without, a repeat names the trial it repeats (``repeat 2 of #3``)."""
    parts = []
    if isinstance(attrs.get("same_as"), int):
        parts.append(f"= #{attrs['same_as'] if same is None else same} (same training)")
    if int(attrs.get("accumulation_steps") or 1) > 1:  # the batch did not fit in one step
        parts.append(
            f"{attrs['accumulation_steps']} accumulated micro-steps of "
            f"{attrs.get('micro_batch_per_replica')}/replica"
        )
    if len(runs) > 1 and number is not None and number in runs:
        first, *_ = runs
        if number == first:
            parts.append(runs_label(sorted(runs)))
        else:
            parts.append(f"run {sorted(runs).index(number) + 1} of #{first}")
    elif isinstance(attrs.get("repeat_of"), int):
        index = attrs.get("repeat_index")
        which = f"repeat {index}" if isinstance(index, int) else "repeat"
        parts.append(f"{which} of #{attrs['repeat_of']}")
    if attrs.get("error"):
        parts.append(str(attrs["error"]))
    return "; ".join(parts)


def target_text(attrs: dict[str, Any]) -> str:
    """The trial's time to the target loss (``12.3 s``), ``missed``, or ``-`` without a target."""
    reached, seconds = attrs.get("reached_target"), attrs.get("time_to_target_s")
    if not reached:
        return "-" if reached is None else "missed"
    return seconds_text(float(seconds)) if isinstance(seconds, int | float) else "reached"


VALUES = {"final_loss": 0, "throughput": 1}
"""Where the study's values hold the two measured attributes."""


def measured(trial: FrozenTrial, key: str) -> Any:
    """``final_loss`` or ``throughput`` as stored (user attribute, else value), or ``None``."""
    value = decode(trial).flat.get(key)
    if value is None and trial.values is not None and len(trial.values) > VALUES[key]:
        value = trial.values[VALUES[key]]
    return value


def trial_layout(rows: list[list[str]], width: int, wide: bool = False) -> Layout:
    """The columns of the trials table that fit ``width``, less those every row makes redundant."""
    drop = _saying_nothing(rows)
    return fit_columns(
        HEADERS, rows, width, TRIAL_PRIORITY, TRIAL_WRAPPING, ("#", "status"), drop, wide
    )


def _saying_nothing(rows: list[list[str]]) -> list[str]:
    """The columns :func:`trial_layout` leaves out whatever the width."""
    drop = [] if _state_matters(rows) else ["state"]
    if all(row[HEADERS.index("runs")] in ("-", "1") for row in rows):
        drop.append("runs")
    if len({row[HEADERS.index("precision")] for row in rows} - {"-"}) < 2:
        drop.append("precision")
    return drop


def _state_matters(rows: list[list[str]]) -> bool:
    """Whether some row's Optuna state is not the one its status ends in."""
    expected = {**STATES, "running": "RUNNING"}
    return any(expected.get(row[STATUS_COLUMN]) != row[HEADERS.index("state")] for row in rows)


def metrics_text(metrics: dict[str, Any] | None) -> str:
    """The model's compiled metrics at the final evaluation as ``accuracy=0.912`` (``-``: none)."""
    if not metrics:
        return "-"
    return " ".join(f"{name}={format(value, '.4g')}" for name, value in metrics.items())


def model_text(values: dict[str, Any] | None) -> str:
    """A hypermodel's values as ``units=64 dropout=0.1`` (``-`` for a plain model)."""
    if not values:
        return "-"
    return " ".join(
        f"{k}={format(v, '.3g') if isinstance(v, float) else v}" for k, v in values.items()
    )


def trial_rows(
    trials: Iterable[FrozenTrial],
    note_width: int = 60,
    every: Sequence[FrozenTrial] | None = None,
) -> list[list[str]]:
    """:func:`trial_cells` of each trial, by number; ``same_as`` and runs are looked up in
    ``every`` (default ``trials``)."""
    ordered = sorted(trials, key=lambda t: t.number)
    every = ordered if every is None else every
    by_original: dict[int, list[FrozenTrial]] = {}
    for t in every:  # one pass, not one per row (quadratic at 1,000 trials)
        by_original.setdefault(original_number(t), []).append(t)
    rows = []
    for trial in ordered:
        group = by_original.get(original_number(trial), [trial])
        first = representative(original_number(trial), group) or trial
        runs = [first.number, *(n for n in run_numbers(trial, group) if n != first.number)]
        rows.append(trial_cells(trial, note_width, shown_measurement(trial, every), runs))
    return rows


def run_rows(trial: FrozenTrial, every: Sequence[FrozenTrial]) -> list[list[str]]:
    """The rows under a representative, one per run it rests on (:func:`each_run`)."""
    rows = []
    for index, (number, throughput, loss) in enumerate(each_run(trial, every), start=1):
        cells = dict.fromkeys(HEADERS, "")
        cells["#"] = f"↳\u00a0#{number}"  # one word: never broken
        cells["samples/s"] = fmt(throughput, ",.0f")
        cells["final loss"] = fmt(loss, ".4g")
        cells["note"] = f"run {index} of #{trial.number}"
        rows.append(list(cells.values()))
    return rows


def short_device(name: str) -> str:
    """``/job:localhost/replica:0/task:0/device:GPU:1`` or ``/gpu:1`` -> ``GPU:1``."""
    tail = name.rsplit("device:", 1)[-1].lstrip("/")
    kind, _, index = tail.partition(":")
    return f"{kind.upper()}:{index}" if index else tail


def environment_rows(
    study_attrs: dict[str, Any], trials: Iterable[FrozenTrial]
) -> list[tuple[str, str]]:
    """Devices and versions of a study, as (label, text) pairs."""
    devices = sorted(
        {
            ", ".join(short_device(d) for d in devices)
            for devices in (decode(t).configuration.devices for t in trials)
            if devices
        }
    )
    versions = study_attrs.get("versions", {})
    workload = study_attrs.get("workload", {})
    rows = [
        ("devices", "; ".join(study_attrs.get("device_signatures", [])) or "-"),
        ("replica devices", "; ".join(devices) or "-"),
        ("versions", ", ".join(f"{k} {v}" for k, v in sorted(versions.items())) or "-"),
    ]
    if workload:
        rows.append(
            (
                "workload",
                f"{study_attrs.get('spec', {}).get('workload', {}).get('model', '?')} on "
                f"{workload.get('n_train', '?')} training samples, "
                f"{fmt(workload.get('parameters'), ',d')} parameters",
            )
        )
    if study_attrs.get(MACHINE_LOAD):  # busy before the first child: throughput unreliable
        rows.append(("machine", load_text(study_attrs[MACHINE_LOAD])))
    rows.extend(("budget", line) for line in budget_lines(study_attrs))
    return rows


def budget_lines(study_attrs: dict[str, Any]) -> list[str]:
    """What the latest search's ``--budget`` left out and a ``--quick`` answer cannot resolve
    (empty when neither applied)."""
    record = study_attrs.get(BUDGET) or {}
    return [record[key] for key in ("line", "quick_line") if record.get(key)]


def hidden_columns(rows: list[list[str]], width: int) -> list[str]:
    """The headers ``--wide`` would add at ``width``: those left out for room, not the empty."""
    shown = set(trial_layout(rows, width).columns)
    quiet = set(_saying_nothing(rows))
    return [
        header
        for index, (header, _) in enumerate(TRIAL_COLUMNS)
        if index not in shown
        and header not in quiet
        and any(row[index] not in ("", "-") for row in rows)
    ]


def wide_hint(hidden: list[str]) -> str:
    """``3 more columns with --wide: lr, val loss, host``."""
    more = f"{len(hidden)} more column" + ("" if len(hidden) == 1 else "s")
    return f"{more} with --wide: {', '.join(hidden)}"
