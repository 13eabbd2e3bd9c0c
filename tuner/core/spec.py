"""The study spec: what to train and which grid to search, loaded from TOML plus CLI overrides.

All validation of a spec happens here, so a bad field is one clear message before anything runs.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tuner.core.errors import ConfigError
from tuner.core.scaling import ADAM_FAMILY, LR_RULES, optimizer_settings

LOOPS = ("fit", "custom")
"""Values of ``search.loop``."""
UPDATE_ON = ("replicas", "cpu")
"""Values of ``search.update_on``."""
LOOP_KINDS = ("fit", "custom", "cpu-update")
"""The training loops a worker runs: ``loop``, with ``custom`` + ``update_on = cpu`` as its own kind
(see :attr:`SearchSpec.loop_kind`)."""
MODEL_HYPERPARAMETERS = ("defaults", "search")
DEFAULT_TRIALS = 20

_REFERENCE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")

_BUILTIN: dict[str, Any] = {
    "study": {"name": "regression"},
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
    data: str
    loss: str = "mse"
    optimizer: str = "adam"


@dataclass(frozen=True)
class SearchSpec:
    """The grid: global batch = base × multiplier, crossed with learning-rate rules."""

    base_batch_size: int
    batch_multipliers: tuple[int, ...]
    lr_rules: tuple[str, ...]
    base_lr: float
    epochs: int
    seed: int = 0
    loop: str = "fit"
    update_on: str = "replicas"
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

    @property
    def joint(self) -> bool:
        """Whether a hypermodel's hyperparameters are searched with the batch size and rule."""
        return self.model_hyperparameters == "search"

    @property
    def loop_kind(self) -> str:
        """The training loop: ``fit``, ``custom`` or ``cpu-update`` (custom, updates on the CPU)."""
        return "cpu-update" if self.update_on == "cpu" else self.loop

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
    source: str = field(default="built-in regression workload", compare=False)

    def to_dict(self) -> dict[str, Any]:
        """Return the spec as plain data (what is stored on the study)."""
        data = asdict(self)
        data.pop("source")
        data["search"]["batch_multipliers"] = list(self.search.batch_multipliers)
        data["search"]["lr_rules"] = list(self.search.lr_rules)
        return data

    def identity(self) -> dict[str, Any]:
        """What must match when a study is resumed: the workload and the grid."""
        return identity_of(self.to_dict())


_SEARCH_DEFAULTS: dict[str, Any] = {
    "model_hyperparameters": "defaults",
    "noise_scale": True,
    "noise_scale_steps": None,
    "warmup_epochs": 1.0,
    "warmup_steps": None,
}


def identity_of(stored: Mapping[str, Any]) -> dict[str, Any]:
    """The resumable identity of a stored spec: all but the name and the trial budget (which may
    grow), with fields added since the spec was stored at their defaults."""
    data = {key: value for key, value in stored.items() if key != "name"}
    search = {**_SEARCH_DEFAULTS, **dict(data.get("search", {}))}
    search.pop("trials", None)
    data["search"] = search
    return data


_FIELDS: dict[str, tuple[str, ...]] = {
    "study": ("name",),
    "workload": ("model", "data", "loss", "optimizer"),
    "search": (
        "base_batch_size",
        "batch_multipliers",
        "lr_rules",
        "base_lr",
        "epochs",
        "seed",
        "loop",
        "update_on",
        "model_hyperparameters",
        "trials",
        "noise_scale",
        "noise_scale_steps",
        "warmup_epochs",
        "warmup_steps",
    ),
}


def load_spec(
    path: str | Path | None = None, overrides: Mapping[str, Any] | None = None
) -> StudySpec:
    """Load a spec from TOML (``None``: the built-in regression workload) and apply overrides.

    ``overrides`` maps ``"section.key"`` (e.g. ``"search.epochs"``) to a value; ``None`` values are
    ignored. Raises :class:`ConfigError` with one clear line for any invalid field.
    """
    if path is None:
        raw: dict[str, Any] = {k: dict(v) for k, v in _BUILTIN.items()}
        source = "built-in regression workload"
    else:
        raw = _read_toml(Path(path))
        source = str(path)
    where: dict[str, str] = {}
    for dotted, value in (overrides or {}).items():
        if value is None:
            continue
        section, key = dotted.split(".")
        table = raw.setdefault(section, {})
        if isinstance(table, dict):  # a non-table section is reported by _build
            table[key] = value
        where[dotted] = "--" + key.replace("_", "-")
    return _build(raw, source, where)


def _read_toml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(f"spec file {path} does not exist; pass --study with a TOML file")
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"spec file {path} is not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"spec file {path} is not valid TOML: it is not UTF-8 text") from None


def _build(raw: dict[str, Any], source: str, where: dict[str, str]) -> StudySpec:
    def label(section: str, key: str) -> str:
        return where.get(f"{section}.{key}", f"{section}.{key} in {source}")

    for section, value in raw.items():
        if section not in _FIELDS:
            raise ConfigError(
                f"unknown section [{section}] in {source}; known: {', '.join(_FIELDS)}"
            )
        if not isinstance(value, dict):
            raise ConfigError(f"[{section}] in {source} must be a table")
        unknown = sorted(set(value) - set(_FIELDS[section]))
        if unknown:
            raise ConfigError(
                f"unknown key {section}.{unknown[0]} in {source}; "
                f"known keys of [{section}]: {', '.join(_FIELDS[section])}"
            )
    study = raw.get("study", {})
    workload = raw.get("workload", {})
    search = raw.get("search", {})

    def need(table: dict[str, Any], section: str, key: str) -> Any:
        if key not in table:
            raise ConfigError(f"{section}.{key} is missing in {source}")
        return table[key]

    name = _string(need(study, "study", "name"), label("study", "name"))
    if not re.fullmatch(r"[\w.\-]+", name):
        raise ConfigError(
            f"{label('study', 'name')} must use letters, digits, '.', '_' or '-' only, got {name!r}"
        )
    workload_spec = WorkloadSpec(
        model=_reference(need(workload, "workload", "model"), label("workload", "model")),
        data=_reference(need(workload, "workload", "data"), label("workload", "data")),
        loss=_string(workload.get("loss", "mse"), label("workload", "loss")),
        optimizer=_string(workload.get("optimizer", "adam"), label("workload", "optimizer")),
    )
    base = _positive_int(
        need(search, "search", "base_batch_size"), label("search", "base_batch_size")
    )
    multipliers = _int_list(
        need(search, "search", "batch_multipliers"), label("search", "batch_multipliers")
    )
    rules = _rule_list(need(search, "search", "lr_rules"), label("search", "lr_rules"))
    base_lr = _positive_float(need(search, "search", "base_lr"), label("search", "base_lr"))
    epochs = _positive_int(need(search, "search", "epochs"), label("search", "epochs"))
    if epochs < 2:
        raise ConfigError(
            f"{label('search', 'epochs')} must be at least 2, got {epochs}: the first epoch "
            "includes tracing and is left out of the throughput"
        )
    seed = search.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ConfigError(f"{label('search', 'seed')} must be a non-negative integer, got {seed!r}")
    loop = _choice(search.get("loop", "fit"), label("search", "loop"), LOOPS)
    update_on = _choice(
        search.get("update_on", "replicas"), label("search", "update_on"), UPDATE_ON
    )
    if update_on == "cpu" and loop == "fit":
        raise ConfigError(
            f"{label('search', 'update_on')} = cpu needs loop = custom: Keras fit under "
            "CentralStorageStrategy does not match one device (see the README)"
        )
    model_hps = _choice(
        search.get("model_hyperparameters", "defaults"),
        label("search", "model_hyperparameters"),
        MODEL_HYPERPARAMETERS,
    )
    trials = _positive_int(search.get("trials", DEFAULT_TRIALS), label("search", "trials"))
    noise_scale = search.get("noise_scale", True)
    if not isinstance(noise_scale, bool):
        raise ConfigError(f"{label('search', 'noise_scale')} must be true or false")
    noise_steps = search.get("noise_scale_steps")
    if noise_steps is not None:
        noise_steps = _positive_int(noise_steps, label("search", "noise_scale_steps"))
    warmup_epochs = search.get("warmup_epochs", 1.0)
    if isinstance(warmup_epochs, bool) or not isinstance(warmup_epochs, int | float):
        raise ConfigError(f"{label('search', 'warmup_epochs')} must be a number of epochs")
    if not math.isfinite(warmup_epochs) or not 0 < warmup_epochs < epochs:
        raise ConfigError(
            f"{label('search', 'warmup_epochs')} must be more than 0 and less than the "
            f"{epochs} epochs, got {warmup_epochs}"
        )
    warmup_steps = search.get("warmup_steps")
    if warmup_steps is not None:
        warmup_steps = _positive_int(warmup_steps, label("search", "warmup_steps"))
    if "sqrt-adam" in rules:
        _check_sqrt_adam(workload_spec.optimizer, base, multipliers, label("search", "lr_rules"))
    return StudySpec(
        name=name,
        workload=workload_spec,
        search=SearchSpec(
            base_batch_size=base,
            batch_multipliers=multipliers,
            lr_rules=rules,
            base_lr=base_lr,
            epochs=epochs,
            seed=seed,
            loop=loop,
            update_on=update_on,
            model_hyperparameters=model_hps,
            trials=trials,
            noise_scale=noise_scale,
            noise_scale_steps=noise_steps,
            warmup_epochs=float(warmup_epochs),
            warmup_steps=warmup_steps,
        ),
        source=source,
    )


_KERAS_ADAM = {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7}


def _check_sqrt_adam(optimizer: str, base: int, multipliers: tuple[int, ...], label: str) -> None:
    """``sqrt-adam`` needs an Adam-family optimizer and ratios its betas survive (checked with
    Keras's Adam defaults here; the child checks the optimizer's own settings again)."""
    if optimizer.lower() not in ADAM_FAMILY:
        raise ConfigError(
            f"{label}: the sqrt-adam rule rescales Adam's moments, but the optimizer is "
            f"{optimizer!r}; use adam or adamw, or drop the rule"
        )
    for multiplier in multipliers:
        try:
            optimizer_settings("sqrt-adam", float(multiplier), _KERAS_ADAM)
        except ValueError as exc:
            raise ConfigError(f"{label}: {exc}") from None


def _string(value: Any, label: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{label} must be a non-empty string, got {value!r}")
    return value.strip()


def _reference(value: Any, label: str) -> str:
    text = _string(value, label)
    if not _REFERENCE.match(text):
        raise ConfigError(
            f"{label} must be 'module:function' (e.g. 'mypkg.models:build'), got {text!r}"
        )
    return text


def _positive_int(value: Any, label: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{label} must be a positive integer, got {value!r}")
    if value <= 0:
        raise ConfigError(f"{label} must be a positive integer, got {value}")
    return value


def _positive_float(value: Any, label: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{label} must be a positive number, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{label} must be a positive number, got {value}")
    return float(value)


def _choice(value: Any, label: str, choices: tuple[str, ...]) -> str:
    text = _string(value, label)
    if text not in choices:
        raise ConfigError(f"{label} must be one of {', '.join(choices)}, got {text!r}")
    return text


def _int_list(value: Any, label: str) -> tuple[int, ...]:
    if not isinstance(value, list | tuple) or not value:
        raise ConfigError(f"{label} must be a non-empty list of positive integers, got {value!r}")
    items = tuple(_positive_int(item, label) for item in value)
    duplicates = sorted({item for item in items if items.count(item) > 1})
    if duplicates:
        raise ConfigError(f"{label} lists {duplicates[0]} more than once; give each value once")
    return items


def _rule_list(value: Any, label: str) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not value:
        raise ConfigError(f"{label} must be a non-empty list of rule names, got {value!r}")
    rules = tuple(_string(item, label) for item in value)
    for rule in rules:
        if rule not in LR_RULES:
            raise ConfigError(
                f"{label}: unknown learning-rate rule {rule!r}; known rules: {', '.join(LR_RULES)}"
            )
    if len(set(rules)) != len(rules):
        raise ConfigError(f"{label} lists a rule more than once; give each rule once")
    return rules


def parse_int_list(text: str, flag: str) -> list[int]:
    """Parse a comma-separated CLI list of integers such as ``"1,2,4"``."""
    parts = [part.strip() for part in text.split(",")]
    if not text.strip() or any(not part for part in parts):
        raise ConfigError(f"{flag} must be comma-separated integers such as 1,2,4, got {text!r}")
    try:
        return [int(part) for part in parts]
    except ValueError:
        raise ConfigError(
            f"{flag} must be comma-separated integers such as 1,2,4, got {text!r}"
        ) from None


def parse_name_list(text: str, flag: str) -> list[str]:
    """Parse a comma-separated CLI list of names such as ``"none,linear"``."""
    parts = [part.strip() for part in text.split(",")]
    if not text.strip() or any(not part for part in parts):
        raise ConfigError(f"{flag} must be comma-separated names such as none,sqrt, got {text!r}")
    return parts
