"""The study spec: what to train and which grid to search, from parsed TOML plus CLI overrides.

All validation of a spec happens here, so a bad field is one clear message before anything runs.
Pure: reading the TOML file is :func:`tuner.driver.setup.spec_file.load_spec`'s job.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from tuner.core.identity import identity_of
from tuner.core.options import DEFAULT_HEARTBEAT_S, DEFAULT_STORAGE_WAIT_S
from tuner.core.recommend import DEFAULT_TIE_MARGIN, DEFAULT_TOLERANCE
from tuner.core.scaling import sweep_rules
from tuner.core.spec._decision import DEFAULT_MAX_REPEATS, DEFAULT_SEEDS
from tuner.core.spec._runtime import (
    DEFAULT_BACKEND,
    DEFAULT_PRECISIONS,
)

DEFAULT_STUDY_NAME = "regression"
"""The built-in workload's study name, the default ``--study-name`` of the browsing commands."""
LOOP_KINDS = ("fit", "custom", "cpu-update")
"""The training loops a worker runs: ``loop``, with ``custom`` + ``update_on = cpu`` as its own kind
(see :attr:`SearchSpec.loop_kind`)."""
MODEL_HYPERPARAMETERS = ("defaults", "search")
DEFAULT_TRIALS = 20
DEFAULT_LOSS = "mse"
DEFAULT_OPTIMIZER = "adam"
"""What an uncompiled build trains with when the spec names no loss or optimizer (a compiled
build's own win over both)."""


BUILTIN_SOURCE = "built-in regression workload"


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
    heartbeat: float = DEFAULT_HEARTBEAT_S
    """Seconds between a worker's heartbeats on an RDB storage (0: off)."""
    storage_wait: float = DEFAULT_STORAGE_WAIT_S
    """Seconds a storage out of reach is waited for before the search stops."""
    lr_sweep_full: bool = False
    """Train every rate of the sweep; by default a rate beyond a worse one than the best at its
    batch is skipped as ``bracketed`` (:mod:`tuner.core.adaptive_sweep`)."""

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
