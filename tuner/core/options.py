"""Every option of the commands that run children, declared once (pure).

The Typer signatures, the options dataclasses, :func:`tuner.search`'s keywords and the reference
rows are read from :data:`OPTIONS`. An option with a spec key and no command is set in the spec
only (once per study), and as a keyword from Python. Errors name an option through :func:`named`,
which each front end renders its own way (:func:`naming`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from tuner.core.probe import DEFAULT_PROBE_STEPS
from tuner.core.scaling import LR_RULES

# Defaults and choices live here so that the table imports no part of tuner naming an option.
DEFAULT_STORAGE = "sqlite:///studies/tuner.db"
DEFAULT_TRIAL_TIMEOUT_S = 1800.0
"""How long the driver waits for one trial process before it kills it (``trial_timeout``)."""
DEFAULT_HEARTBEAT_S = 20.0
"""Seconds between a worker's heartbeats; a trial silent for longer is re-run by another."""
DEFAULT_STORAGE_WAIT_S = 300.0
"""Seconds an unreachable storage is waited for before a search stops."""
DEFAULT_JOIN_WAIT_S = 300.0
"""Seconds a gang's ranks wait for each other: the first join, a lost rank's return."""
DEFAULT_MIN_LR = 1e-7
DEFAULT_MAX_LR = 10.0
LR_FIND_STEPS = 200
"""Steps of the ramp: 25 per decade over the default 8 decades."""
BACKENDS = ("tensorflow", "jax")
"""Values of ``workload.backend``: the Keras 3 backend a trial trains on."""
LOOPS = ("fit", "custom")
UPDATE_ON = ("replicas", "cpu")
MODEL_HYPERPARAMETERS = ("defaults", "search")
LOSS_REDUCTIONS = ("global", "replica-mean")
"""``replica-mean``: per-replica means summed, the forum answer's bug, for validate to catch."""
DEFAULT_VALIDATE_STEPS = 20
"""Over 20 steps float32 rounding stays within ``WEIGHTS_RTOL`` on a convnet; a bad update won't."""
DEFAULT_VALIDATE_RULE = "none"
"""Validation compares runs at one global batch, so by default the learning rate is not scaled."""

RUN = ("search", "probe", "validate", "lr-find")
GRID = ("search", "probe")
TRAIN = ("search", "probe", "validate")
SEARCH, PROBE, VALIDATE, LR_FIND = ("search",), ("probe",), ("validate",), ("lr-find",)
GANG = ("search", "validate")


@dataclass(frozen=True)
class Option:
    """One option: ``commands`` take it as a flag (``flags``, else ``--key-with-dashes``);
    ``spec`` is the ``section.key`` it overrides (``None``: not in the spec). ``kind`` is its
    value's type (``tuple``: a comma-separated list of ``items``); ``default`` ``None`` means "not
    given": the spec's value stands. ``shown`` is how ``--help`` shows the default."""

    key: str
    help: str
    kind: type = str
    default: Any = None
    commands: tuple[str, ...] = ()
    spec: str | None = None
    flags: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()
    items: type = str
    shown: str | None = None
    envvar: str | None = None
    minimum: int | None = None
    field: str = ""  # where SearchSpec keeps it: ``group.name`` (``sweep.full``)
    check: str = ""  # the spec's check of its value (tuner.core.spec._parse's _CHECKS)
    resumable: bool = False  # a resumed study may change it (not the grid: a budget, a margin)

    @property
    def flag(self) -> str:
        """The flag's first name (``--base-lr``)."""
        return self.flags[0] if self.flags else "--" + self.key.replace("_", "-")


_KINDS: dict[str, type] = {"count": int, "rates": int, "seed": int, "switch": bool,
                           "counts": tuple, "rules": tuple, "precisions": tuple,
                           "choice": str, "duration": str}  # fmt: skip
"""A ``[search]`` option's type, by its check (else ``float``)."""


def _search(at: str, key: str, check: str, help: str, **more: Any) -> Option:
    """A ``[search]`` option kept ``at`` a sub-record (``grid``) or field (``sweep.full``)."""
    field = at if "." in at else f"{at}.{key}"
    kind = _KINDS.get(check, float)
    return Option(key, help, kind, spec=f"search.{key}", field=field, check=check, **more)


_grid, _run = partial(_search, "grid"), partial(_search, "run")
_decision = partial(_search, "decision", resumable=True)  # margins and budgets: all may change
_switch = partial(Option, kind=bool, default=False, commands=SEARCH)
_gang = partial(Option, commands=GANG)  # else the launcher's environment: tuner.core.gang
_ENV = "the launcher's, else "


OPTIONS: tuple[Option, ...] = (
    Option("spec", "Study spec (TOML file).", Path, commands=RUN, shown="built-in regression"),
    Option(
        "gpus", "GPU indices, e.g. 0,1.", commands=RUN, shown="all visible; none: 2 CPU replicas"
    ),
    Option("cpu_replicas", "Run on N logical CPU devices instead of GPUs.", int, commands=RUN),
    Option("memory_limit", "Memory cap per device, e.g. 512MiB or 14GiB.", commands=RUN),
    _gang("hosts", "Hosts a trial spans (JAX), one tuner each.", int, minimum=1, shown=_ENV + "1"),
    _gang("rank", "This host's rank in the gang, 0 to hosts-1.", int, minimum=0, shown=_ENV + "0"),
    _gang("coordinator", "Rank 0's HOST:PORT; the trials' JAX runtime takes PORT+1."),
    Option(
        "storage",
        "Optuna storage URL (or set TUNER_STORAGE, or TUNER_STORAGE_FILE naming a file that "
        "holds it: either keeps a password out of `ps`).",
        default=DEFAULT_STORAGE,
        commands=GRID,
        envvar="TUNER_STORAGE",
    ),
    Option(
        "study_name",
        "Study name: letters, digits, '.', '_' or '-'.",
        commands=GRID,
        shown="the spec's name",
    ),
    _grid("base_batch_size", "count", "Base global batch B.", commands=RUN),
    _grid(
        "batch_multipliers",
        "counts",
        "Global batches as multiples of B, e.g. 1,2,4.",
        items=int,
        commands=GRID,
    ),
    _grid(
        "lr_rules",
        "rules",
        f"Learning-rate rules, comma-separated, from: {', '.join(LR_RULES)}.",
        commands=GRID,
    ),
    _search(
        "sweep.rates",
        "lr_sweep",
        "rates",
        "Train N learning rates at every global batch, log-spaced from half the none rule's "
        "rate to twice the linear rule's, and measure how the best rate scales with the batch "
        "(the law: alpha in lr* ~ B^alpha, the critical batch). 0: no sweep.",
        commands=SEARCH,
    ),
    _grid("base_lr", "positive", "Learning rate at batch B.", commands=TRAIN),
    _run("epochs", "count", "Epochs per run (at least 2).", commands=TRAIN),
    _run(
        "train_samples",
        "count",
        "Samples every trial trains on, whatever its batch (instead of --epochs).",
        commands=TRAIN,
    ),
    _run(
        "val_samples",
        "count",
        "The fixed validation set: its first N samples, in order.",
        commands=("probe", "validate"),
    ),
    _run(
        "loop",
        "choice",
        "Training loop: Keras fit, or custom (strategy.run).",
        choices=LOOPS,
        commands=("probe", "validate", "lr-find"),
    ),
    _run(
        "update_on",
        "choice",
        "Where the weights are updated (cpu needs --loop custom).",
        choices=UPDATE_ON,
        commands=("probe", "validate", "lr-find"),
    ),
    Option(
        "backend",
        "Keras backend: tensorflow (MirroredStrategy) or jax (keras.distribution).",
        spec="workload.backend",
        choices=BACKENDS,
        commands=RUN,
    ),
    _grid(
        "precisions",
        "precisions",
        "Precisions, comma-separated, from: float32, mixed_bfloat16, mixed_float16.",
        commands=PROBE,
    ),
    Option(
        "trial_timeout",
        "Seconds before a child run is killed.",
        float,
        DEFAULT_TRIAL_TIMEOUT_S,
        commands=("search", "validate", "lr-find"),
    ),
    Option("export", "Write the recommended-config JSON here.", Path, commands=SEARCH),
    _switch("validate", "Run the validate checks first; stop on failure."),
    _switch("probe", "Probe the largest fitting batch first."),
    _switch(
        "baseline",
        "Record a single-device trial at the base batch (speedup, efficiency).",
        default=True,
    ),
    _run(
        "noise_scale", "switch", "Measure the gradient noise scale (2+ replicas).", commands=SEARCH
    ),
    _decision(
        "seeds",
        "count",
        "Runs of the base configuration with different seeds (weights and data order); the "
        "loss tolerance becomes max(tolerance, 2 × their spread). 1 turns it off.",
        commands=SEARCH,
    ),
    _decision(
        "max_repeats",
        "count",
        "Most runs of a close candidate: racing re-runs candidates whose 95 % intervals overlap "
        "the best one's (of one computation, only the lowest final loss). 1 turns racing off.",
        commands=SEARCH,
    ),
    _run(
        "target_loss",
        "number",
        "Validation loss to train to: trials stop when they reach it and the default policy "
        "becomes time-to-target.",
        commands=SEARCH,
    ),
    _decision(
        "budget",
        "duration",
        "Time the search may take, e.g. 90s, 15m, 1h30m: a run that would not fit is not "
        "started (the grid before seeds and repeats, repeats most decisive first), and the end "
        "says what was left out and what it costs.",
        commands=SEARCH,
    ),
    _switch(
        "quick",
        "A first answer: one run per configuration, one baseline run, no seed runs "
        "(--max-repeats 1 --seeds 1; an explicit --max-repeats or --seeds wins).",
    ),
    # Set once per study: in the spec (and as keywords of tuner.search), not as flags.
    Option(
        "objective",
        "The value trials store and compare as their loss: one the evaluation logs (val_mae), "
        "or the training loss (loss); default the validation loss.",
        spec="workload.objective",
    ),
    _grid("model_hyperparameters", "choice", "Or search.", choices=MODEL_HYPERPARAMETERS),
    _grid("trials", "count", "Trial budget of a joint search.", resumable=True),
    _decision("tolerance", "fraction", "Final-loss tolerance."),
    _decision("tie_margin", "fraction", "Throughput tie margin."),
    _run("eval_every_samples", "count", "Samples between two target checks."),
    _decision("early_stop", "switch", "Stop dominated trials early."),
    _search("sweep.full", "lr_sweep_full", "switch", "No bracketing.", resumable=True),
    _search("storage", "heartbeat", "seconds", "Heartbeat period (0: off).", resumable=True),
    _search("storage.wait", "storage_wait", "seconds", "Outage wait.", resumable=True),
    _search("storage.join_wait", "join_wait", "seconds", "Gang's wait for ranks.", resumable=True),
    _run("seed", "seed", "The seed of weights and data order."),
    _run("noise_scale_steps", "count", "Extra noise-scale steps per epoch."),
    _run("warmup_epochs", "warmup", "Epochs of linear-warmup's ramp."),
    _run("warmup_steps", "count", "Optimizer steps of linear-warmup's ramp."),
    _run("accumulation", "switch", "Reach a batch by gradient accumulation."),
    # The commands' own.
    Option(
        "resolution",
        "Probe resolution in samples (default: an eighth of the base batch).",
        int,
        commands=PROBE,
    ),
    Option("steps", "Training steps per probed size.", int, DEFAULT_PROBE_STEPS, commands=PROBE),
    Option(
        "batch_size",
        "Global batch G of both runs (default: the base batch).",
        int,
        commands=VALIDATE,
    ),
    Option(
        "lr_rule",
        "Learning-rate rule at G.",
        default=DEFAULT_VALIDATE_RULE,
        choices=LR_RULES,
        commands=VALIDATE,
    ),
    Option(
        "steps",
        "Training steps per run, over all epochs.",
        int,
        DEFAULT_VALIDATE_STEPS,
        commands=VALIDATE,
    ),
    Option(
        "loss_reduction",
        "Custom loops, and fit under --backend jax: global (right), or replica-mean (the forum "
        "answer's bug, to see it caught).",
        default=LOSS_REDUCTIONS[0],
        choices=LOSS_REDUCTIONS,
        commands=VALIDATE,
    ),
    Option(
        "accumulation",
        "Instead: prove K accumulated micro-steps of --batch-size give the weights of one step "
        "at K × it (Keras's gradient_accumulation_steps).",
        int,
        commands=VALIDATE,
        minimum=2,
    ),
    Option("min_lr", "Learning rate of the ramp's first step.", float, DEFAULT_MIN_LR, LR_FIND),
    Option("max_lr", "Learning rate of the ramp's last step.", float, DEFAULT_MAX_LR, LR_FIND),
    Option(
        "steps",
        "Steps of the ramp (one rate each, geometric); it stops at divergence.",
        int,
        LR_FIND_STEPS,
        commands=LR_FIND,
    ),
    Option(
        "output",
        "Write the JSON report here.",
        Path,
        commands=("validate", "lr-find"),
        flags=("--output", "-o"),
    ),
    Option(
        "plot",
        "Write the loss-vs-rate figure here: .html, or .png (needs Chrome).",
        Path,
        commands=LR_FIND,
    ),
)
"""The table, in the order of each command's ``--help``."""


def options_of(command: str) -> list[Option]:
    """The flags of ``command`` in the table's order, each key once (its first row)."""
    found: dict[str, Option] = {}
    for option in OPTIONS:
        if command in option.commands:
            found.setdefault(option.key, option)
    return list(found.values())


def spec_only(section: str | None = "search") -> list[Option]:
    """The options set in the spec's ``section`` (``None``: any) and by no command's flag."""
    return [
        o
        for o in OPTIONS
        if o.spec and not o.commands and (section is None or o.spec.startswith(section + "."))
    ]


def option(key: str, command: str | None = None) -> Option:
    """The row of ``key`` (``command``'s own, when it has one)."""
    rows = [o for o in OPTIONS if o.key == key]
    if not rows:
        raise KeyError(key)
    return next((o for o in rows if command in o.commands), rows[0])


@dataclass(frozen=True)
class _Naming:
    command: str | None = None
    keywords: bool = False
    renamed: Mapping[str, str] = field(default_factory=dict)


_NAMING: ContextVar[_Naming | None] = ContextVar("tuner_naming", default=None)


@contextmanager
def naming(
    command: str | None, *, keywords: bool = False, renamed: Mapping[str, str] | None = None
) -> Iterator[None]:
    """Within the block, `named` names ``command``'s options by its flags (the CLI), or by
    ``keywords`` (Python; ``renamed`` maps a key to its keyword: ``{"storage": "storage_url"}``)."""
    token = _NAMING.set(_Naming(command, keywords, dict(renamed or {})))
    try:
        yield
    finally:
        _NAMING.reset(token)


def named(key: str) -> str:
    """How the user set the option ``key``: ``--base-lr`` on the command line, ``base_lr=`` in
    Python, and ``search.heartbeat`` for an option the command takes from the spec only."""
    now = _NAMING.get() or _Naming()
    if now.keywords:
        return f"{now.renamed.get(key, key)}="
    rows = [o for o in OPTIONS if o.key == key]
    spec = next((o.spec for o in rows if o.spec), None)
    if spec and now.command is not None and not any(now.command in o.commands for o in rows):
        return spec
    return option(key, now.command).flag if rows else "--" + key.replace("_", "-")
