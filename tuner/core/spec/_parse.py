"""A spec's assembly: parsed TOML tables plus CLI overrides into a :class:`StudySpec`, every
field checked (a bad one is one clear line before anything runs). The ``[search]`` keys and their
checks come from the options table (:mod:`tuner.core.options`); only the keys checked together
are named here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from tuner.core.errors import ConfigError
from tuner.core.objective import DEFAULT_OBJECTIVE, parse_objective
from tuner.core.options import OPTIONS, Option, named
from tuner.core.spec import _fields as fields
from tuner.core.spec._fields import Table, check_study_name
from tuner.core.spec._runtime import backend, check_backend, check_loop, precision_list
from tuner.core.spec._spec import (
    BUILTIN_SOURCE,
    DEFAULT_STUDY_NAME,
    KERAS_OBJECT_KEYS,
    SEARCH_DEFAULTS,
    KerasObject,
    SearchSpec,
    StudySpec,
    WorkloadSpec,
    keras_class,
)

_BUILTIN: dict[str, Any] = {
    "study": {"name": DEFAULT_STUDY_NAME},
    "workload": {
        "model": "tuner.workloads.regression:build_model",
        "data": "tuner.workloads.regression:load_data",
        "loss": "mse",
        "optimizer": "adam",
    },
    "search": {
        "base_batch_size": 64,
        "batch_multipliers": [1, 2],
        "lr_rules": ["none", "linear", "sqrt"],
        "base_lr": 1e-3,
        "epochs": 3,
    },
}


SECTION_KEYS: dict[str, tuple[str, ...]] = {
    "study": ("name",),
    "workload": ("model", "data", "dataset", "loss", "optimizer", "backend", "objective"),
    "search": tuple(row.key for row in OPTIONS if row.field),
}
"""The keys each table of a spec may hold."""


def spec_from_dict(
    raw: Mapping[str, Any] | None = None,
    overrides: Mapping[str, Any] | None = None,
    source: str | None = None,
) -> StudySpec:
    """A spec from parsed TOML tables (``None``: the built-in regression workload) with
    ``overrides`` (``"search.epochs"`` to a value; ``None`` ignored) applied; ``source`` names
    where ``raw`` came from in error lines."""
    if raw is None:
        raw, source = _BUILTIN, BUILTIN_SOURCE
    tables, where = apply_overrides(raw, overrides or {})
    return build_spec(tables, source or "the spec", where)


_REPLACES = {"search.train_samples": "epochs", "search.epochs": "train_samples"}
"""A flag for one budget replaces the spec's other: the two are exclusive."""


def apply_overrides(
    raw: Mapping[str, Any], overrides: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, str]]:
    """A copy of ``raw`` with ``overrides`` set, and the option that set each field as the front
    end names it (``--base-lr``, or ``base_lr=``), so that errors name it rather than the file."""
    tables = {key: dict(value) if isinstance(value, dict) else value for key, value in raw.items()}
    where: dict[str, str] = {}
    for dotted, value in overrides.items():
        if value is None:
            continue
        section, key = dotted.split(".")
        table = tables.setdefault(section, {})
        if isinstance(table, dict):  # a non-table section is reported by build_spec
            table[key] = value
            table.pop(_REPLACES.get(dotted, ""), None)
        where[dotted] = named(key)
    return tables, where


def build_spec(
    raw: Mapping[str, Any], source: str, where: Mapping[str, str] | None = None
) -> StudySpec:
    """Parsed spec tables, validated; ``where`` maps ``"section.key"`` to the flag that set it."""
    fields.check_layout(raw, source, SECTION_KEYS)
    study, workload, search = (
        Table(section, raw.get(section, {}), source, where or {}) for section in SECTION_KEYS
    )
    workload_spec = _workload(workload)
    search_spec = _search(search, workload_spec.optimizer)
    run = search_spec.run
    check_backend(workload_spec.backend, search, workload, run.loop, run.update_on)
    return StudySpec(_study_name(study), workload_spec, search_spec, source)


def _study_name(study: Table) -> str:
    label = study.label("name")
    return check_study_name(fields.string(study.need("name"), label), label)


def _workload(workload: Table) -> WorkloadSpec:
    return WorkloadSpec(
        model=fields.reference(workload.need("model"), workload.label("model")),
        **_data_source(workload),
        loss=_keras_object(workload, "loss"),
        optimizer=_keras_object(workload, "optimizer"),
        backend=backend(workload),
        objective=_objective(workload),
    )


def _objective(workload: Table) -> str:
    value = workload.get("objective")
    return (
        DEFAULT_OBJECTIVE if value is None else parse_objective(value, workload.label("objective"))
    )


def _keras_object(workload: Table, key: str) -> KerasObject | None:
    """A Keras name or serialized form, or ``None`` (the build compiles). Only the form is
    checked here: whether Keras knows the class and takes the config, the workload check says."""
    value, label = workload.get(key), workload.label(key)
    if value is None or not isinstance(value, Mapping):
        return None if value is None else fields.string(value, label)
    unknown = sorted(set(value) - set(KERAS_OBJECT_KEYS))
    if unknown:
        raise ConfigError(
            f"{label} has an unknown key {unknown[0]!r}: Keras's serialized form has "
            f"{', '.join(KERAS_OBJECT_KEYS)} (the settings go in config)"
        )
    form = "{class_name = ..., config = {...}}"
    if "class_name" not in value:
        raise ConfigError(f"{label} needs a class_name, as in {key} = {form}")
    fields.string(value["class_name"], f"{label}.class_name")
    if not isinstance(value.get("config", {}), Mapping):
        raise ConfigError(f"{label}.config must be a table of the class's settings, as in {form}")
    return _plain_table(value)


def _plain_table(value: Mapping[str, Any]) -> dict[str, Any]:
    """A nested mapping as plain dicts (what the stored spec's JSON holds)."""
    return {str(k): _plain_table(v) if isinstance(v, Mapping) else v for k, v in value.items()}


def _data_source(workload: Table) -> dict[str, str | None]:
    """Exactly one of ``data`` (arrays or datasets) and ``dataset`` (a dataset function)."""
    key = workload.exactly_one(
        ("data", "arrays or (train, val) datasets"),
        ("dataset", "a function (split, batch_size, input_context)"),
    )
    value = fields.reference(workload.get(key), workload.label(key))
    return {name: value if key == name else None for name in ("data", "dataset")}


def _search(search: Table, optimizer: KerasObject | None) -> SearchSpec:
    """Each ``[search]`` key checked as its row of the options table says, then together."""
    search.exactly_one(
        ("epochs", "whole passes over a finite training set"),
        ("train_samples", "the samples every trial trains on"),
    )
    values = {row.key: _value(search, row) for row in OPTIONS if row.field}
    _check_together(search, values)
    spec = SearchSpec.from_flat(values)
    if "sqrt-adam" in spec.grid.lr_rules and optimizer is not None:  # else the build's: the child
        fields.check_sqrt_adam(
            keras_class(optimizer),
            spec.grid.base_batch_size,
            spec.grid.batch_multipliers,
            search.label("lr_rules"),
        )
    return spec


_CHECKS: dict[str, Callable[[Any, str], Any]] = {
    "count": fields.positive_int,
    "counts": fields.int_list,
    "rules": fields.rule_list,
    "precisions": precision_list,
    "positive": fields.positive_float,
    "number": fields.finite,
    "fraction": fields.fraction,
    "switch": fields.switch,
    "seconds": fields.seconds,
    "seed": fields.seed,
    "rates": fields.rates,
    "duration": fields.duration,
    "warmup": lambda value, label: value,  # with the epochs: _check_together
}
"""The checks the options table names (:attr:`~tuner.core.options.Option.check`)."""


def _value(search: Table, row: Option) -> Any:
    """``row``'s value: checked; absent, the field's default (none: a key the spec must give)."""
    value = search.get(row.key)
    if value is None:
        return search.need(row.key) if row.key not in SEARCH_DEFAULTS else SEARCH_DEFAULTS[row.key]
    label = search.label(row.key)
    if row.check == "choice":
        return fields.choice(value, label, row.choices)
    return _CHECKS[row.check](value, label)


def _check_together(search: Table, values: dict[str, Any]) -> None:
    """The keys whose check needs another's value."""
    epochs = values["epochs"]
    if epochs is not None and epochs < 2:
        raise ConfigError(
            f"{search.label('epochs')} must be at least 2, got {epochs}: the first epoch "
            "includes tracing and is left out of the throughput"
        )
    values["warmup_epochs"] = _warmup_epochs(search, epochs, values["warmup_epochs"])
    check_loop(search, values["loop"], values["update_on"], values["precisions"])
    if values["eval_every_samples"] is not None and values["target_loss"] is None:
        raise ConfigError(
            f"{search.label('eval_every_samples')} sets how often the loss target is checked; "
            f"give a target_loss ({named('target_loss')}) too, or drop it"
        )


def _warmup_epochs(search: Table, epochs: int | None, value: Any) -> float:
    """The ramp must end inside the run, or ``linear-warmup`` never reaches its peak."""
    label = search.label("warmup_epochs")
    if epochs is None:  # a sample budget has no epochs: its ramp is warmup_steps (or 10 %)
        if "warmup_epochs" in search.values:
            raise ConfigError(f"{label} needs epochs; with train_samples give warmup_steps")
        return float(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{label} must be a number of epochs")
    if not math.isfinite(value) or not 0 < value < epochs:
        raise ConfigError(
            f"{label} must be more than 0 and less than the {epochs} epochs, got {value}"
        )
    return float(value)
