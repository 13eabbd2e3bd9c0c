"""The study spec's model: what to train and which grid to search (pure; reading the TOML file
is :func:`tuner.driver.setup.spec_file.load_spec`'s job, validating it :mod:`._parse`'s).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any

from tuner.core.objective import DEFAULT_OBJECTIVE
from tuner.core.options import (
    DEFAULT_HEARTBEAT_S,
    DEFAULT_JOIN_WAIT_S,
    DEFAULT_STORAGE_WAIT_S,
    OPTIONS,
)
from tuner.core.recommend import DEFAULT_TIE_MARGIN, DEFAULT_TOLERANCE
from tuner.core.scaling import sweep_rules
from tuner.core.spec._runtime import DEFAULT_BACKEND, DEFAULT_PRECISIONS

DEFAULT_STUDY_NAME = "regression"
"""The built-in workload's study name, the default ``--study-name`` of the browsing commands."""
LOOP_KINDS = ("fit", "custom", "cpu-update")
"""The training loops a worker runs (:attr:`RunSpec.loop_kind`)."""
DEFAULT_LOSS = "mse"
DEFAULT_OPTIMIZER = "adam"
"""What an uncompiled build trains with when the spec names no loss or optimizer (a compiled
build's own win over both)."""


BUILTIN_SOURCE = "built-in regression workload"

KerasObject = str | dict[str, Any]
"""A Keras loss or optimizer as a spec gives it: a name (``"adam"``), or Keras's own serialized
form (``{"class_name": "SparseCategoricalCrossentropy", "config": {"from_logits": True}}``),
which the child deserializes."""
KERAS_OBJECT_KEYS = ("class_name", "config", "module", "registered_name")
"""The keys of Keras's serialized form (``class_name`` is the one it needs)."""


def keras_class(value: KerasObject) -> str:
    """The name a loss or optimizer is known by: the name itself, or its ``class_name``."""
    return value if isinstance(value, str) else str(value["class_name"])


@dataclass(frozen=True)
class WorkloadSpec:
    """What one trial trains: ``module:function`` references plus a Keras loss and optimizer."""

    model: str
    data: str | None
    """``module:function`` returning arrays or ``(train, val)`` tf.data datasets."""
    loss: KerasObject | None = None
    """``None``: the build's compile gives it, else :data:`DEFAULT_LOSS`. A build's compile wins
    over a named one, and the search says so."""
    optimizer: KerasObject | None = None
    """As ``loss``. Its learning rate is always the rule's: a serialized one's is replaced."""
    dataset: str | None = None
    """``module:function(split, batch_size, input_context)``: one split (instead of ``data``)."""
    backend: str = DEFAULT_BACKEND
    objective: str = DEFAULT_OBJECTIVE
    """The value trials store and compare as their loss (:mod:`tuner.core.objective`)."""


@dataclass(frozen=True)
class GridSpec:
    """The grid: global batch = base × multiplier, crossed with learning-rate rules."""

    base_batch_size: int
    batch_multipliers: tuple[int, ...]
    lr_rules: tuple[str, ...]
    base_lr: float
    precisions: tuple[str, ...] = DEFAULT_PRECISIONS
    """Keras dtype policies the grid crosses with batches and rules (``mixed_bfloat16``, …)."""
    model_hyperparameters: str = "defaults"
    trials: int = 20
    """Trial budget when model hyperparameters are searched (the grid sets it otherwise)."""

    @property
    def joint(self) -> bool:
        """Whether a hypermodel's hyperparameters are searched with the batch size and rule."""
        return self.model_hyperparameters == "search"

    @property
    def global_batch_sizes(self) -> tuple[int, ...]:
        """Ascending."""
        return tuple(sorted(self.base_batch_size * m for m in self.batch_multipliers))


@dataclass(frozen=True)
class RunSpec:
    """How each trial trains and is measured."""

    epochs: int | None = None
    """Whole passes over a finite training set (exactly one of ``epochs`` and ``train_samples``)."""
    train_samples: int | None = None
    """Samples every trial trains on, whatever its batch (steps = samples // global batch)."""
    val_samples: int | None = None
    """The fixed validation set: its first samples, in order (``None``: all of it)."""
    seed: int = 0
    loop: str = "fit"
    update_on: str = "replicas"
    warmup_epochs: float = 1.0
    """``linear-warmup``: epochs of the ramp (``warmup_steps``, when set, overrides it)."""
    warmup_steps: int | None = None
    noise_scale: bool = True
    """Measure the gradient noise scale in trials with at least 2 replicas."""
    noise_scale_steps: int | None = None
    """Extra untimed measurement steps per epoch (``None``: 1 % of an epoch's, 2 to 16)."""
    accumulation: bool = False
    target_loss: float | None = None
    """``None``: train the whole budget."""
    eval_every_samples: int | None = None
    """Samples between two checks of the target (``None``: about 10 checks per budget)."""

    @property
    def loop_kind(self) -> str:
        """``fit``, ``custom`` or ``cpu-update`` (custom, updates on the CPU)."""
        return "cpu-update" if self.update_on == "cpu" else self.loop


@dataclass(frozen=True)
class DecisionSpec:
    """How sure a decision must be, and what the search may spend on it."""

    seeds: int = 3
    """Runs of the base configuration, its grid run included, measuring the seed noise; 1: off."""
    max_repeats: int = 3
    """The most runs racing gives a close candidate; 1 turns racing off."""
    tolerance: float = DEFAULT_TOLERANCE
    tie_margin: float = DEFAULT_TIE_MARGIN
    early_stop: bool = True
    """Stop a grid trial early once it is dominated (:mod:`tuner.core.dominance`)."""
    budget: float | None = None
    """Seconds the search may take; ``None``: no limit."""


@dataclass(frozen=True)
class SweepSpec:
    """The learning-rate sweep: ``sweep-i/N`` rules beside the grid's, for the measured law."""

    rates: int = 0
    """Learning rates swept at every batch (``0``: no sweep)."""
    full: bool = False
    """Train every rate: none skipped as ``bracketed``."""


@dataclass(frozen=True)
class StorageSpec:
    """How the search meets its storage, and a gang's ranks each other."""

    heartbeat: float = DEFAULT_HEARTBEAT_S
    """Seconds between a worker's heartbeats on an RDB storage (0: off)."""
    wait: float = DEFAULT_STORAGE_WAIT_S
    """Seconds a storage out of reach is waited for."""
    join_wait: float = DEFAULT_JOIN_WAIT_S
    """Seconds a gang's ranks wait for each other (:mod:`tuner.core.gang`)."""


def _plain(value: Any) -> Any:
    """A tuple as the list that plain data (JSON, TOML) holds."""
    return list(value) if isinstance(value, tuple) else value


_RECORDS: dict[str, type] = {"grid": GridSpec, "run": RunSpec, "decision": DecisionSpec,
                             "sweep": SweepSpec, "storage": StorageSpec}  # fmt: skip
_PLACES = {row.key: tuple(row.field.split(".")) for row in OPTIONS if row.field}
"""Each flat ``[search]`` key's sub-record and field, from the options table."""
SEARCH_DEFAULTS: dict[str, Any] = {
    key: field.default
    for key, (group, name) in _PLACES.items()
    for field in fields(_RECORDS[group])
    if field.name == name and field.default is not MISSING
}
"""The flat ``[search]`` keys that have a default, at it."""


@dataclass(frozen=True)
class SearchSpec:
    """What the search runs, in sub-records whose fields are the one typed declaration of the
    ``[search]`` values; the options table places each flat key on its field, and :meth:`flat`
    and :meth:`from_flat` convert, so that the spec file and the stored spec keep flat keys."""

    grid: GridSpec
    run: RunSpec
    decision: DecisionSpec = DecisionSpec()
    sweep: SweepSpec = SweepSpec()
    storage: StorageSpec = StorageSpec()

    @property
    def grid_rules(self) -> tuple[str, ...]:
        """The grid's rule axis: the fixed rules, then the LR sweep's points."""
        return self.grid.lr_rules + sweep_rules(self.sweep.rates)

    def flat(self) -> dict[str, Any]:
        """The flat ``[search]`` keys, in the options table's order."""
        return {key: _plain(getattr(getattr(self, g), n)) for key, (g, n) in _PLACES.items()}

    @classmethod
    def from_flat(cls, values: Mapping[str, Any]) -> SearchSpec:
        """The spec of flat ``[search]`` keys (unchecked: :func:`~tuner.core.spec.spec_from_dict`
        checks them); a key not given keeps its default."""
        groups: dict[str, dict[str, Any]] = {group: {} for group in _RECORDS}
        for key, value in values.items():
            group, name = _PLACES[key]
            groups[group][name] = tuple(value) if isinstance(value, list) else value
        return cls(**{group: _RECORDS[group](**given) for group, given in groups.items()})


@dataclass(frozen=True)
class StudySpec:
    """A whole study definition."""

    name: str
    workload: WorkloadSpec
    search: SearchSpec
    source: str = field(default=BUILTIN_SOURCE, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The spec as plain data (what is stored on the study)."""
        return {"name": self.name, "workload": asdict(self.workload), "search": self.search.flat()}

    def identity(self) -> dict[str, Any]:
        """What must match when a study is resumed: the workload and the grid."""
        return identity_of(self.to_dict())


_MAY_CHANGE = {row.key for row in OPTIONS if row.field and row.resumable}
"""Search keys a resumed study may change (the table's ``resumable``): budgets, margins."""


def identity_of(stored: Mapping[str, Any]) -> dict[str, Any]:
    """The resumable identity of a stored spec: all but the name and the keys a resumed study
    may change, with keys added since the spec was stored at their defaults."""
    data = {key: value for key, value in stored.items() if key != "name"}
    search = {**{k: _plain(v) for k, v in SEARCH_DEFAULTS.items()}, **dict(data.get("search", {}))}
    workload = {
        "dataset": None,
        "backend": DEFAULT_BACKEND,
        "objective": DEFAULT_OBJECTIVE,
        **dict(data.get("workload", {})),
    }
    # Unnamed (None since builds' compiles are kept) and the default named are one identity.
    workload["loss"] = workload.get("loss") or DEFAULT_LOSS
    workload["optimizer"] = workload.get("optimizer") or DEFAULT_OPTIMIZER
    data["workload"] = workload
    data["search"] = {key: value for key, value in search.items() if key not in _MAY_CHANGE}
    return data
