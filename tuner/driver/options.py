"""The options of the commands that run children, one frozen dataclass per command.

Each field is the command's flag with underscores (``--cpu-replicas`` -> ``cpu_replicas``,
``--no-baseline`` -> ``baseline=False``) and defaults to the flag's default, so the CLI and a
Python caller build the same object. ``None`` means "not given": the spec file's value (or the
built-in spec's) stands. Choices are plain strings (``loop="custom"``); the comma-separated
flags take their text or, from Python, a sequence. Nothing here imports Typer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuner.core.errors import ConfigError
from tuner.core.probe import DEFAULT_PROBE_STEPS
from tuner.core.protocol import DEFAULT_TRIAL_TIMEOUT_S
from tuner.core.spec import LOSS_REDUCTIONS
from tuner.driver.validate.run import DEFAULT_RULE, DEFAULT_STEPS
from tuner.storage import DEFAULT_HEARTBEAT_S, DEFAULT_STORAGE, DEFAULT_STORAGE_WAIT_S

if TYPE_CHECKING:
    from tuner.core.devices import DevicePlan
    from tuner.core.spec import StudySpec


@dataclass(frozen=True, kw_only=True)
class SpecOptions:
    """The spec file, the devices and the spec overrides every run command takes."""

    spec: str | Path | Mapping[str, Any] | None = None
    """The TOML spec file, or its tables already read (:func:`tuner.search`)."""
    gpus: str | None = None
    cpu_replicas: int | None = None
    memory_limit: str | None = None
    base_batch_size: int | None = None
    base_lr: float | None = None
    epochs: int | None = None
    train_samples: int | None = None
    val_samples: int | None = None
    loop: str | None = None
    update_on: str | None = None
    backend: str | None = None

    def spec_overrides(self) -> dict[str, Any]:
        """The ``"section.key"`` overrides of the spec (``None``: keep the spec's value)."""
        return {
            "search.base_batch_size": self.base_batch_size,
            "search.base_lr": self.base_lr,
            "search.epochs": self.epochs,
            "search.loop": self.loop,
            "search.update_on": self.update_on,
            "workload.backend": self.backend,
            "search.train_samples": self.train_samples,
            "search.val_samples": self.val_samples,
        }


@dataclass(frozen=True, kw_only=True)
class GridOptions(SpecOptions):
    """A run into a study: its storage, its name and the grid (``tuner probe``'s options)."""

    storage: str = DEFAULT_STORAGE
    study_name: str | None = None
    batch_multipliers: str | Sequence[int] | None = None
    lr_rules: str | Sequence[str] | None = None
    precisions: str | Sequence[str] | None = None

    def spec_overrides(self) -> dict[str, Any]:
        from tuner.core.spec import parse_int_list, parse_name_list

        # Text is parsed here, so that a bad list names its flag (a sequence: the spec checks it).
        def listed(text: Any, parse: Any, flag: str) -> Any:
            return parse(text, flag) if isinstance(text, str) and text else text

        return super().spec_overrides() | {
            "search.batch_multipliers": listed(
                self.batch_multipliers, parse_int_list, "--batch-multipliers"
            ),
            "search.lr_rules": listed(self.lr_rules, parse_name_list, "--lr-rules"),
            "search.precisions": listed(self.precisions, parse_name_list, "--precisions"),
        }


@dataclass(frozen=True, kw_only=True)
class ProbeOptions(GridOptions):
    """``tuner probe``: the largest global batch that fits."""

    resolution: int | None = None
    steps: int = DEFAULT_PROBE_STEPS


@dataclass(frozen=True, kw_only=True)
class SearchOptions(GridOptions):
    """``tuner search``: the options model the CLI builds, and :func:`tuner.search` too."""

    trial_timeout: float = DEFAULT_TRIAL_TIMEOUT_S
    export: Path | None = None
    validate: bool = False
    heartbeat: float = DEFAULT_HEARTBEAT_S
    """Seconds between worker heartbeats; 0 turns them off."""
    storage_wait: float = DEFAULT_STORAGE_WAIT_S
    """Seconds an unreachable storage is waited for before the search stops."""
    probe: bool = False
    baseline: bool = True
    model_hyperparameters: str | None = None
    trials: int | None = None
    noise_scale: bool | None = None
    seeds: int | None = None
    max_repeats: int | None = None
    lr_sweep: int | None = None
    """Learning rates swept at every batch (``[search] lr_sweep``; 0: none)."""
    lr_sweep_full: bool | None = None
    """Train every rate of the sweep (``[search] lr_sweep_full``); else a rate that cannot be
    the best at its batch is skipped (``bracketed``)."""
    tolerance: float | None = None
    tie_margin: float | None = None
    target_loss: float | None = None
    eval_every_samples: int | None = None
    early_stop: bool | None = None
    """Stop dominated grid trials early (``[search] early_stop``; ``False``: every trial runs to
    its end)."""
    budget: str | float | None = None
    """The time the search may take: ``"15m"``, ``"1h30m"``, ``"90s"`` or seconds."""
    quick: bool = False
    """A first answer: one run per configuration and one baseline run (``max_repeats`` 1), no
    seed runs (``seeds`` 1). An explicit ``max_repeats`` or ``seeds`` wins over it."""

    def spec_overrides(self) -> dict[str, Any]:
        quick = {"search.max_repeats": 1, "search.seeds": 1} if self.quick else {}
        given = {key: value for key, value in self._overrides().items() if value is not None}
        return super().spec_overrides() | quick | given

    def _overrides(self) -> dict[str, Any]:
        return {
            f"search.{key}": getattr(self, key)
            for key in (
                "model_hyperparameters",
                "trials",
                "noise_scale",
                "seeds",
                "max_repeats",
                "lr_sweep",
                "lr_sweep_full",
                "tolerance",
                "tie_margin",
                "target_loss",
                "eval_every_samples",
                "early_stop",
                "budget",
            )
        }


@dataclass(frozen=True, kw_only=True)
class ValidateOptions(SpecOptions):
    """``tuner validate``: one device against several."""

    batch_size: int | None = None
    lr_rule: str = DEFAULT_RULE
    steps: int = DEFAULT_STEPS
    loss_reduction: str = LOSS_REDUCTIONS[0]
    accumulation: int | None = None
    output: Path | None = None
    trial_timeout: float = DEFAULT_TRIAL_TIMEOUT_S


def spec_and_plan(
    options: SpecOptions, trial_timeout: float | None = None
) -> tuple[StudySpec, DevicePlan, str | None]:
    """The checked spec (its file, then the options' overrides), the device plan, and the plan's
    notice for the user (``None``: nothing to say). ``trial_timeout`` is checked when given.

    Raises :class:`ConfigError` (or :class:`~tuner.core.errors.MissingExtraError` for a backend
    that is not installed) before anything runs.
    """
    from tuner.driver.setup.devices import plan_devices, require_backend
    from tuner.driver.setup.spec_file import load_spec

    overrides = options.spec_overrides()  # first: a bad list is reported before the rest
    if trial_timeout is not None and not (math.isfinite(trial_timeout) and trial_timeout > 0):
        raise ConfigError(
            f"--trial-timeout must be a positive number of seconds, got {trial_timeout}"
        )
    spec = load_spec(options.spec, overrides)
    require_backend(spec.workload.backend)
    plan, notice = plan_devices(
        options.gpus, options.cpu_replicas, options.memory_limit, backend=spec.workload.backend
    )
    return spec, plan, notice
