"""A spec's assembly: parsed TOML tables plus CLI overrides into a :class:`StudySpec`, every
field checked, so that a bad one is one clear line before anything runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from tuner.core.errors import ConfigError
from tuner.core.options import named
from tuner.core.spec import _fields as fields
from tuner.core.spec._decision import decision_fields
from tuner.core.spec._fields import Table, check_study_name
from tuner.core.spec._runtime import backend, check_backend, loop_fields
from tuner.core.spec._spec import (
    BUILTIN_SOURCE,
    DEFAULT_STUDY_NAME,
    DEFAULT_TRIALS,
    MODEL_HYPERPARAMETERS,
    SearchSpec,
    StudySpec,
    WorkloadSpec,
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
    "workload": ("model", "data", "dataset", "loss", "optimizer", "backend"),
    "search": (
        "base_batch_size",
        "batch_multipliers",
        "lr_rules",
        "lr_sweep",
        "lr_sweep_full",
        "base_lr",
        "epochs",
        "seed",
        "loop",
        "update_on",
        "precisions",
        "model_hyperparameters",
        "trials",
        "noise_scale",
        "noise_scale_steps",
        "accumulation",
        "warmup_epochs",
        "warmup_steps",
        "train_samples",
        "val_samples",
        "seeds",
        "max_repeats",
        "tolerance",
        "tie_margin",
        "target_loss",
        "eval_every_samples",
        "early_stop",
        "budget",
        "heartbeat",
        "storage_wait",
    ),
}
"""The keys each table of a spec may hold."""


def spec_from_dict(
    raw: Mapping[str, Any] | None = None,
    overrides: Mapping[str, Any] | None = None,
    source: str | None = None,
) -> StudySpec:
    """Build a spec from parsed TOML tables (``None``: the built-in regression workload) with
    overrides applied; ``source`` names where ``raw`` came from in error lines.

    ``overrides`` maps ``"section.key"`` (e.g. ``"search.epochs"``) to a value; ``None`` values are
    ignored. Raises :class:`ConfigError` with one clear line for any invalid field.
    """
    if raw is None:
        raw, source = _BUILTIN, BUILTIN_SOURCE
    tables, where = apply_overrides(raw, overrides or {})
    return build_spec(tables, source or "the spec", where)


_REPLACES = {"search.train_samples": "epochs", "search.epochs": "train_samples"}
"""A flag for one budget replaces the spec's other: the two are exclusive."""


def apply_overrides(
    raw: Mapping[str, Any], overrides: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, str]]:
    """A copy of ``raw`` with ``overrides`` set, and the option that set each overridden field
    as the front end names it (``search.base_lr`` -> ``--base-lr``, or ``base_lr=``), so errors
    name the option rather than the file."""
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
    """Validate parsed spec tables into a :class:`StudySpec`. ``where`` maps ``"section.key"`` to
    the flag that set it. Raises :class:`ConfigError` naming the field (or flag) at fault."""
    fields.check_layout(raw, source, SECTION_KEYS)
    study, workload, search = (
        Table(section, raw.get(section, {}), source, where or {}) for section in SECTION_KEYS
    )
    workload_spec = _workload(workload)
    search_spec = _search(search, workload_spec.optimizer)
    check_backend(workload_spec.backend, search, workload, search_spec.loop, search_spec.update_on)
    return StudySpec(
        name=_study_name(study),
        workload=workload_spec,
        search=search_spec,
        source=source,
    )


def _study_name(study: Table) -> str:
    return check_study_name(
        fields.string(study.need("name"), study.label("name")), study.label("name")
    )


def _workload(workload: Table) -> WorkloadSpec:
    return WorkloadSpec(
        model=fields.reference(workload.need("model"), workload.label("model")),
        **_data_source(workload),
        loss=_optional_name(workload, "loss"),
        optimizer=_optional_name(workload, "optimizer"),
        backend=backend(workload),
    )


def _optional_name(workload: Table, key: str) -> str | None:
    """A Keras name the spec may leave out when the user's build compiles the model."""
    value = workload.get(key)
    return None if value is None else fields.string(value, workload.label(key))


def _data_source(workload: Table) -> dict[str, str | None]:
    """Exactly one of ``data`` (arrays or datasets) and ``dataset`` (a dataset function)."""
    key = workload.exactly_one(
        ("data", "arrays or (train, val) datasets"),
        ("dataset", "a function (split, batch_size, input_context)"),
    )
    value = fields.reference(workload.get(key), workload.label(key))
    return {
        "data": value if key == "data" else None,
        "dataset": value if key == "dataset" else None,
    }


def _search(search: Table, optimizer: str | None) -> SearchSpec:
    grid = _grid(search)
    spec = SearchSpec(
        **grid,
        seed=_seed(search),
        **loop_fields(search),
        **_budget(search),
        **_noise_and_warmup(search, grid["epochs"]),
        **decision_fields(search),
    )
    if "sqrt-adam" in spec.lr_rules and optimizer is not None:  # else the build's: the child
        fields.check_sqrt_adam(
            optimizer, spec.base_batch_size, spec.batch_multipliers, search.label("lr_rules")
        )
    return spec


def _lr_sweep(search: Table) -> int:
    """``lr_sweep``: 0 (no sweep) or at least 3 rates (a parabola needs three)."""
    value = search.get("lr_sweep", 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value in (1, 2):
        raise ConfigError(
            f"{search.label('lr_sweep')} must be 0 (no sweep) or a number of rates of at least 3, "
            f"got {value!r}"
        )
    return value


def _grid(search: Table) -> dict[str, Any]:
    """The grid's fields: base batch, multipliers, rules, base learning rate and epochs."""
    grid: dict[str, Any] = {
        "base_batch_size": fields.positive_int(
            search.need("base_batch_size"), search.label("base_batch_size")
        ),
        "batch_multipliers": fields.int_list(
            search.need("batch_multipliers"), search.label("batch_multipliers")
        ),
        "lr_rules": fields.rule_list(search.need("lr_rules"), search.label("lr_rules")),
        "lr_sweep": _lr_sweep(search),
        "base_lr": fields.positive_float(search.need("base_lr"), search.label("base_lr")),
        **_sample_budget(search),
    }
    if grid["epochs"] is not None and grid["epochs"] < 2:
        raise ConfigError(
            f"{search.label('epochs')} must be at least 2, got {grid['epochs']}: the first epoch "
            "includes tracing and is left out of the throughput"
        )
    return grid


def _sample_budget(search: Table) -> dict[str, int | None]:
    """Exactly one of ``epochs`` and ``train_samples``; ``val_samples`` optional."""
    search.exactly_one(
        ("epochs", "whole passes over a finite training set"),
        ("train_samples", "the samples every trial trains on"),
    )
    budget = {key: search.optional_positive_int(key) for key in ("epochs", "train_samples")}
    return {**budget, "val_samples": search.optional_positive_int("val_samples")}


def _seed(search: Table) -> int:
    seed = search.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ConfigError(f"{search.label('seed')} must be a non-negative integer, got {seed!r}")
    return seed


def _budget(search: Table) -> dict[str, Any]:
    """Whether a hypermodel's hyperparameters are searched, and the trial budget if so."""
    mode = fields.choice(
        search.get("model_hyperparameters", "defaults"),
        search.label("model_hyperparameters"),
        MODEL_HYPERPARAMETERS,
    )
    trials = fields.positive_int(search.get("trials", DEFAULT_TRIALS), search.label("trials"))
    return {"model_hyperparameters": mode, "trials": trials}


def _noise_and_warmup(search: Table, epochs: int) -> dict[str, Any]:
    noise_scale = search.get("noise_scale", True)
    if not isinstance(noise_scale, bool):
        raise ConfigError(f"{search.label('noise_scale')} must be true or false")
    accumulation = search.get("accumulation", False)
    if not isinstance(accumulation, bool):
        raise ConfigError(f"{search.label('accumulation')} must be true or false")
    return {
        "noise_scale": noise_scale,
        "noise_scale_steps": search.optional_positive_int("noise_scale_steps"),
        "accumulation": accumulation,
        "warmup_epochs": _warmup_epochs(search, epochs),
        "warmup_steps": search.optional_positive_int("warmup_steps"),
    }


def _warmup_epochs(search: Table, epochs: int | None) -> float:
    """The ramp must end inside the run, or ``linear-warmup`` never reaches its peak."""
    label = search.label("warmup_epochs")
    value = search.get("warmup_epochs", 1.0)
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
