"""The study spec: what to train and which grid to search, from parsed TOML plus CLI overrides.

All validation of a spec happens here, so a bad field is one clear message before anything runs.
Pure: reading the TOML file is :func:`tuner.driver.spec_file.load_spec`'s job.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from tuner.core.errors import ConfigError
from tuner.core.identity import identity_of
from tuner.core.recommend import DEFAULT_TIE_MARGIN, DEFAULT_TOLERANCE
from tuner.core.scaling import sweep_rules
from tuner.core.spec import _fields as fields
from tuner.core.spec._decision import DEFAULT_MAX_REPEATS, DEFAULT_SEEDS, decision_fields
from tuner.core.spec._fields import Table, check_study_name
from tuner.core.spec._runtime import (
    DEFAULT_BACKEND,
    DEFAULT_PRECISIONS,
    backend,
    check_backend,
    loop_fields,
)

DEFAULT_STUDY_NAME = "regression"
"""The built-in workload's study name, the default ``--study-name`` of the browsing commands."""
LOOP_KINDS = ("fit", "custom", "cpu-update")
"""The training loops a worker runs: ``loop``, with ``custom`` + ``update_on = cpu`` as its own kind
(see :attr:`SearchSpec.loop_kind`)."""
LOSS_REDUCTIONS = ("global", "replica-mean")
"""How a custom loop reduces the loss: over the global batch (right), or a per-replica mean summed
over replicas (the forum answer's bug, kept so that ``tuner validate`` can show it caught)."""
MODEL_HYPERPARAMETERS = ("defaults", "search")
DEFAULT_TRIALS = 20
DEFAULT_LOSS = "mse"
DEFAULT_OPTIMIZER = "adam"
"""What an uncompiled build trains with when the spec names no loss or optimizer (a compiled
build's own win over both)."""

BUILTIN_SOURCE = "built-in regression workload"
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


@dataclass(frozen=True)
class WorkloadSpec:
    """What one trial trains: ``module:function`` references plus Keras loss and optimizer names."""

    model: str
    data: str | None
    """``module:function`` returning arrays or ``(train, val)`` tf.data datasets."""
    loss: str | None = None
    """A Keras loss name; ``None``: not named — the build's compile gives it, else
    :data:`DEFAULT_LOSS`. A build's compile wins over a named one, and the search says so."""
    optimizer: str | None = None
    """A Keras optimizer name; ``None``: the build's compile gives it, else
    :data:`DEFAULT_OPTIMIZER` (as for ``loss``)."""
    dataset: str | None = None
    """``module:function(split, batch_size, input_context)`` returning one split (instead of
    ``data``)."""
    backend: str = DEFAULT_BACKEND
    """The Keras 3 backend trials train on: ``tensorflow`` or ``jax``."""


@dataclass(frozen=True)
class SearchSpec:
    """The grid: global batch = base × multiplier, crossed with learning-rate rules."""

    base_batch_size: int
    batch_multipliers: tuple[int, ...]
    lr_rules: tuple[str, ...]
    base_lr: float
    epochs: int | None
    """Whole passes over a finite training set (exactly one of ``epochs`` and ``train_samples``)."""
    seed: int = 0
    loop: str = "fit"
    update_on: str = "replicas"
    precisions: tuple[str, ...] = DEFAULT_PRECISIONS
    """Keras dtype policies the grid crosses with batches and rules (``float32``,
    ``mixed_bfloat16``, ``mixed_float16``)."""
    model_hyperparameters: str = "defaults"
    trials: int = DEFAULT_TRIALS
    """Trial budget when model hyperparameters are searched (the grid sets it otherwise)."""
    noise_scale: bool = True
    """Measure the gradient noise scale in trials with at least 2 replicas."""
    noise_scale_steps: int | None = None
    """Extra measurement steps at the end of each epoch, outside the timed epochs (``None``: 1 %
    of an epoch's steps, at least 2 and at most 16)."""
    warmup_epochs: float = 1.0
    """``linear-warmup``: epochs of the ramp (unless ``warmup_steps`` is set)."""
    warmup_steps: int | None = None
    """``linear-warmup``: optimizer steps of the ramp (overrides ``warmup_epochs``)."""
    train_samples: int | None = None
    """Samples every trial trains on, whatever its batch (steps = samples // global batch)."""
    val_samples: int | None = None
    """The fixed validation set: its first samples, in order (``None``: all of it)."""
    seeds: int = DEFAULT_SEEDS
    """Runs of the base configuration with different seeds (initial weights and data order) that
    measure the loss's seed noise; 1 turns it off."""
    max_repeats: int = DEFAULT_MAX_REPEATS
    """The most runs racing gives a close candidate; 1 turns racing off."""
    tolerance: float = DEFAULT_TOLERANCE
    """Final-loss tolerance relative to the best (raised to 2 × the seed spread when larger)."""
    tie_margin: float = DEFAULT_TIE_MARGIN
    """Throughputs within this relative margin of the best are practically equal: the smallest
    batch of them is picked."""
    target_loss: float | None = None
    """Validation loss a trial trains to (time to target); ``None``: train the whole budget."""
    eval_every_samples: int | None = None
    """Samples between two checks of the target (``None``: about 10 checks per budget)."""
    early_stop: bool = True
    """Stop a grid trial early when a sequential test says it is dominated
    (:mod:`tuner.core.dominance`); ``--no-early-stop`` turns it off."""
    accumulation: bool = False
    """Reach a global batch that runs out of memory in one step by gradient accumulation
    (:mod:`tuner.core.accumulation`)."""
    budget: float | None = None
    """Seconds the search may take (``--budget 15m``): runs that would not fit are left out
    (:mod:`tuner.core.budget`); ``None``: no limit."""
    lr_sweep: int = 0
    """Learning rates swept at every batch (``sweep-i/N`` rules beside ``lr_rules``), from half
    the ``none`` rate to twice the ``linear`` one: the measured law (``0``: no sweep)."""

    @property
    def joint(self) -> bool:
        """Whether a hypermodel's hyperparameters are searched with the batch size and rule."""
        return self.model_hyperparameters == "search"

    @property
    def loop_kind(self) -> str:
        """The training loop: ``fit``, ``custom`` or ``cpu-update`` (custom, updates on the CPU)."""
        return "cpu-update" if self.update_on == "cpu" else self.loop

    @property
    def grid_rules(self) -> tuple[str, ...]:
        """The grid's rule axis: the fixed rules, then the LR sweep's points."""
        return self.lr_rules + sweep_rules(self.lr_sweep)

    @property
    def global_batch_sizes(self) -> tuple[int, ...]:
        """The global batch sizes of the grid, ascending."""
        return tuple(sorted(self.base_batch_size * m for m in self.batch_multipliers))


@dataclass(frozen=True)
class StudySpec:
    """A whole study definition."""

    name: str
    workload: WorkloadSpec
    search: SearchSpec
    source: str = field(default=BUILTIN_SOURCE, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """Return the spec as plain data (what is stored on the study)."""
        data = asdict(self)
        data.pop("source")
        data["search"]["batch_multipliers"] = list(self.search.batch_multipliers)
        data["search"]["lr_rules"] = list(self.search.lr_rules)
        data["search"]["precisions"] = list(self.search.precisions)
        return data

    def identity(self) -> dict[str, Any]:
        """What must match when a study is resumed: the workload and the grid."""
        return identity_of(self.to_dict())


_FIELDS: dict[str, tuple[str, ...]] = {
    "study": ("name",),
    "workload": ("model", "data", "dataset", "loss", "optimizer", "backend"),
    "search": (
        "base_batch_size",
        "batch_multipliers",
        "lr_rules",
        "lr_sweep",
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
    ),
}


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
    """A copy of ``raw`` with ``overrides`` set, and the flag that set each overridden field
    (``search.base_lr`` -> ``--base-lr``), so errors name the flag rather than the file."""
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
        where[dotted] = "--" + key.replace("_", "-")
    return tables, where


def build_spec(
    raw: Mapping[str, Any], source: str, where: Mapping[str, str] | None = None
) -> StudySpec:
    """Validate parsed spec tables into a :class:`StudySpec`. ``where`` maps ``"section.key"`` to
    the flag that set it. Raises :class:`ConfigError` naming the field (or flag) at fault."""
    fields.check_layout(raw, source, _FIELDS)
    study, workload, search = (
        Table(section, raw.get(section, {}), source, where or {}) for section in _FIELDS
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
