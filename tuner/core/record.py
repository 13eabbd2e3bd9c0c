"""A stored trial as a typed record: the one module that knows every user attribute's name
(``docs/reference/attributes.md``).

A trial stores five scalars (optuna-dashboard shows only scalar attributes as columns) and five
JSON groups (:data:`STORED_KEYS`). Every reader goes through :func:`decode`, never through
``user_attrs``; each name is the one the earlier flat layout stored it under, so a trial that
layout wrote is read by the same table. Writers speak names too: :func:`encode` groups a flat
mapping, refusing a name no group owns; :func:`store` writes only the changed stored keys.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Protocol


@dataclass(frozen=True)
class Configuration:
    """What the trial runs, where and by whom; written as it starts."""

    global_batch_size: int | None = None
    per_replica_batch_size: int | None = None
    num_replicas: int | None = None
    lr_rule: str | None = None
    precision: str | None = None
    device_signature: str | None = None
    device_model: str | None = None
    device_count: int | None = None
    devices: list[str] | None = None
    host: str | None = None
    worker: str | None = None
    heartbeat_s: float | None = None
    loop: str | None = None
    update_on: str | None = None
    model_hyperparameters: dict[str, Any] | None = None
    training_key: str | None = None
    accumulation_steps: int | None = None
    micro_batch_per_replica: int | None = None
    accumulation_reason: str | None = None


@dataclass(frozen=True)
class Result:
    """What the child measured, and the runs of the configuration it stands for."""

    train_loss: float | None = None
    throughput_spread: float | None = None
    epoch_throughputs: list[float] | None = None
    window_throughputs: list[float] | None = None
    warmup_windows: int | None = None
    epoch_losses: list[float] | None = None
    peak_memory_bytes: int | None = None
    peak_rss_bytes: int | None = None
    backend: str | None = None
    device_kind: str | None = None
    optimizer_learning_rate: float | None = None
    optimizer: dict[str, Any] | None = None
    compile: dict[str, Any] | None = None
    model_parameters: int | None = None
    model_layers: int | None = None
    gradient_noise_scale: float | None = None
    gradient_noise_scale_per_epoch: list[Any] | None = None
    noise_scale_steps: int | None = None
    noise_scale_note: str | None = None
    add_loss_note: str | None = None
    noise_scale_skipped: str | None = None
    statistical_efficiency: float | None = None
    goodput: float | None = None
    steps_per_epoch: int | None = None
    windows: int | None = None
    window_steps: int | None = None
    train_samples_used: int | None = None
    val_samples_used: int | None = None
    val_metrics: dict[str, float] | None = None
    """The final evaluation's other logged figures (the compiled metrics: ``accuracy`` ...)."""
    input_form: str | None = None
    input_rebatched: bool | None = None
    input_throughput: float | None = None
    input_bound: bool | None = None
    run_throughput: float | None = None
    repeats: list[float] | None = None
    repeat_losses: list[float] | None = None
    throughput_ci: list[float] | None = None
    throughput_ci_method: str | None = None


@dataclass(frozen=True)
class Decision:
    """What decided the trial's end beside its status: target, early stop, accumulation."""

    target_loss: float | None = None
    eval_every_samples: int | None = None
    reached_target: bool | None = None
    samples_to_target: int | None = None
    time_to_target_s: float | None = None
    target_curve: list[list[float]] | None = None
    compile_s: float | None = None
    eval_s: float | None = None
    time_to_target_runs: list[float | None] | None = None
    samples_to_target_runs: list[int | None] | None = None
    reached_runs: int | None = None
    time_to_target_ci: list[float] | None = None
    val_curve: list[list[float]] | None = None
    dominance: dict[str, Any] | None = None
    early_stop_skipped: str | None = None
    accumulation_skipped: str | None = None


@dataclass(frozen=True)
class Reuse:
    """Where the trial's figures came from when not from its own measurement."""

    same_as: int | None = None
    repeat_of: int | None = None
    repeat_index: int | None = None
    input_key: str | None = None
    input_throughput_from: int | None = None


STATES: dict[str, str] = {
    "ok": "COMPLETE",
    "oom": "PRUNED",
    "oom-implied": "PRUNED",
    "batch-failed": "PRUNED",
    "bracketed": "PRUNED",
    "diverged": "PRUNED",
    "dominated": "PRUNED",
    "timeout": "FAIL",
    "crashed": "FAIL",
    "error": "FAIL",
    "interrupted": "FAIL",
}
"""Each stored ``status`` and the Optuna state a trial with it ends in."""
GROUPS: dict[str, type] = {
    "configuration": Configuration,
    "result": Result,
    "decision": Decision,
    "reuse": Reuse,
}
"""The JSON groups by stored name (``timings`` is a group of its own: a plain mapping)."""
SCALARS = ("status", "error", "final_loss", "throughput", "learning_rate")
"""Attributes stored flat on purpose: optuna-dashboard shows scalar attributes only."""
STORED_KEYS = (*SCALARS, *GROUPS, "timings")
"""Every user attribute a trial stores."""
_OWNER: dict[str, str] = {
    name.name: group for group, cls in GROUPS.items() for name in fields(cls)
} | {name: name for name in (*SCALARS, "timings")}
"""Each attribute name (the earlier layout's flat name) -> the stored key that holds it."""


_NAMES: dict[type, frozenset[str]] = {
    cls: frozenset(f.name for f in fields(cls)) for cls in GROUPS.values()
}


class _HasUserAttrs(Protocol):
    @property
    def user_attrs(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class TrialRecord:
    """A stored trial, decoded once: its scalars and groups as typed fields."""

    status: str | None = None
    error: str | None = None
    final_loss: float | None = None
    throughput: float | None = None
    learning_rate: float | None = None
    configuration: Configuration = field(default_factory=Configuration)
    result: Result = field(default_factory=Result)
    timings: Mapping[str, float] = field(default_factory=dict)
    decision: Decision = field(default_factory=Decision)
    reuse: Reuse = field(default_factory=Reuse)

    @property
    def flat(self) -> dict[str, Any]:
        """Every stored figure by its name, ``None`` left out."""
        out = {name: value for name in SCALARS if (value := getattr(self, name)) is not None}
        if self.timings:
            out["timings"] = dict(self.timings)
        for group in GROUPS:
            part = getattr(self, group)
            out.update(
                (f.name, v) for f in fields(part) if (v := getattr(part, f.name)) is not None
            )
        return out


def decode(trial: _HasUserAttrs) -> TrialRecord:
    """``trial``'s record (a ``FrozenTrial`` or a live ``Trial``), in either layout. A finished
    trial is decoded once, kept while it lives: it no longer changes, and the driver's loop
    reads every trial at each step."""
    attrs = trial.user_attrs
    kept = _DECODED.get(id(trial))
    if kept is not None and kept[0]() is trial and kept[1] == (id(attrs), len(attrs)):
        return kept[2]
    record = _decoded(attrs)
    state = getattr(trial, "state", None)  # a live Trial has none: it is still being written
    if state is not None and state.is_finished():
        key = id(trial)
        alive = weakref.ref(trial, lambda _: _DECODED.pop(key, None))
        _DECODED[key] = (alive, (id(attrs), len(attrs)), record)
    return record


_DECODED: dict[int, tuple[weakref.ref[Any], tuple[int, int], TrialRecord]] = {}
"""Finished trials' records by the trial's id, with the trial (weakly) and which attribute
mapping they were decoded from (a test's hand-made trial may be changed in place)."""


def _decoded(attrs: Mapping[str, Any]) -> TrialRecord:
    grouped = any(isinstance(attrs.get(group), dict) for group in GROUPS)
    parts: dict[str, Any] = {}
    for group, cls in GROUPS.items():
        source = attrs.get(group) if grouped else attrs
        parts[group] = _group(cls, source if isinstance(source, dict) else {})
    timings = attrs.get("timings")
    scalars: dict[str, Any] = {name: attrs.get(name) for name in SCALARS}
    return TrialRecord(
        **scalars, timings=dict(timings) if isinstance(timings, dict) else {}, **parts
    )


def _group(cls: type, source: Mapping[str, Any]) -> Any:
    """``cls`` from the names of ``source`` it owns (others are not its own: left out)."""
    names = _NAMES[cls]
    return cls(**{name: value for name, value in source.items() if name in names})


def encode(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The stored attributes for a flat mapping of names (:class:`KeyError`: a name unowned)."""
    out: dict[str, Any] = {}
    for name, value in attrs.items():
        owner = _OWNER.get(name)
        if owner is None:
            raise KeyError(f"no stored trial attribute is named {name!r}")
        if owner == name:
            out[name] = value
        else:
            out.setdefault(owner, {})[name] = value
    return out


def changes(trial: _HasUserAttrs, attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The stored keys to write so that ``trial`` holds ``attrs`` on top of its record: those
    that change, each group whole (an earlier-layout trial gets every group it has figures for)."""
    merged = encode({**decode(trial).flat, **attrs})
    stored = trial.user_attrs
    return {key: value for key, value in merged.items() if stored.get(key) != value}


def store(trial: Any, attrs: Mapping[str, Any]) -> int:
    """Write ``attrs`` onto the live ``trial`` (only changed keys); how many writes it took."""
    written = changes(trial, attrs)
    for key, value in written.items():
        trial.set_user_attr(key, value)
    return len(written)


@dataclass(frozen=True)
class StudyRecord:
    """A stored study's own attributes (docs/reference/attributes.md, "The study"), decoded."""

    spec: dict[str, Any] | None = None
    created_at: str | None = None
    backend: str | None = None
    device_signatures: list[str] | None = None
    versions: dict[str, Any] | None = None
    workload: dict[str, Any] | None = None
    baselines: dict[str, Any] | None = None
    probes: dict[str, Any] | None = None
    hypermodel: dict[str, Any] | None = None
    seed_noise: dict[str, Any] | None = None
    budget: dict[str, Any] | None = None
    machine_load: dict[str, Any] | None = None

    @property
    def flat(self) -> dict[str, Any]:
        """Every stored attribute by its name, ``None`` left out."""
        return {f.name: v for f in fields(self) if (v := getattr(self, f.name)) is not None}


STUDY_KEYS = tuple(f.name for f in fields(StudyRecord))
"""Every user attribute a study stores."""


def decode_study(study: _HasUserAttrs) -> StudyRecord:
    """``study``'s record (read from storage once here); a name it does not own is left out."""
    attrs = study.user_attrs
    return StudyRecord(**{name: attrs[name] for name in STUDY_KEYS if name in attrs})


def store_study(study: Any, name: str, value: Any) -> None:
    """Set the study attribute ``name`` through ``study.set_user_attr``; a name
    :class:`StudyRecord` does not own raises :class:`KeyError`."""
    if name not in STUDY_KEYS:
        raise KeyError(f"no stored study attribute is named {name!r}")
    study.set_user_attr(name, value)
