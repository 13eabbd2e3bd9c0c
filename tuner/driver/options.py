"""The options of the commands that run children, one frozen dataclass per command.

Each field is a key of the options table (:mod:`tuner.core.options`: its flag, default and spec
key); the CLI and a Python caller build the same object. ``None`` means "not given": the spec's
value stands. The comma-separated lists take their text or, from Python, a sequence.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from tuner.core.errors import ConfigError
from tuner.core.options import (
    DEFAULT_STORAGE,
    DEFAULT_TRIAL_TIMEOUT_S,
    DEFAULT_VALIDATE_RULE,
    DEFAULT_VALIDATE_STEPS,
    LOSS_REDUCTIONS,
    named,
    option,
    spec_only,
)
from tuner.core.probe import DEFAULT_PROBE_STEPS

if TYPE_CHECKING:
    from tuner.core.devices import DevicePlan
    from tuner.core.gang import Gang
    from tuner.core.spec import StudySpec


@dataclass(frozen=True, kw_only=True)
class SpecOptions:
    """The spec file, the devices and the spec overrides every run command takes."""

    COMMAND: ClassVar[str] = "validate"
    """Whose rows of the options table these are."""
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
        """The ``"section.key"`` override of each field with a spec key (``None``: keep the
        spec's value). A list's text is parsed here, so that a bad one names its option (a
        sequence: the spec checks it)."""
        from tuner.core.spec import parse_int_list, parse_name_list

        overrides: dict[str, Any] = {}
        for field in dataclasses.fields(self):
            if field.name == "spec_values":  # SearchOptions's spec-only keys: its own
                continue
            row = option(field.name, self.COMMAND)
            value = getattr(self, field.name)
            if row.spec is None:
                continue
            if row.kind is tuple and isinstance(value, str) and value:
                value = (parse_int_list if row.items is int else parse_name_list)(
                    value, named(field.name)
                )
            overrides[row.spec] = value
        return overrides


@dataclass(frozen=True, kw_only=True)
class GangOptions:
    """The gang a command's trials span (:mod:`tuner.core.gang`; search and validate)."""

    hosts: int | None = None
    rank: int | None = None
    coordinator: str | None = None
    """``None``: the launcher's environment says (else one host)."""


@dataclass(frozen=True, kw_only=True)
class GridOptions(SpecOptions):
    """A run into a study: its storage, its name and the grid (``tuner probe``'s options)."""

    COMMAND: ClassVar[str] = "probe"
    storage: str = DEFAULT_STORAGE
    study_name: str | None = None
    batch_multipliers: str | Sequence[int] | None = None
    lr_rules: str | Sequence[str] | None = None
    precisions: str | Sequence[str] | None = None


@dataclass(frozen=True, kw_only=True)
class ProbeOptions(GridOptions):
    """``tuner probe``: the largest global batch that fits."""

    resolution: int | None = None
    steps: int = DEFAULT_PROBE_STEPS


@dataclass(frozen=True, kw_only=True)
class SearchOptions(GridOptions, GangOptions):
    """``tuner search``: the options model the CLI builds, and :func:`tuner.search` too (with
    the ``[search]`` keys that have no flag in ``spec_values``)."""

    COMMAND: ClassVar[str] = "search"
    trial_timeout: float = DEFAULT_TRIAL_TIMEOUT_S
    export: Path | None = None
    validate: bool = False
    probe: bool = False
    baseline: bool = True
    lr_sweep: int | None = None
    noise_scale: bool | None = None
    seeds: int | None = None
    max_repeats: int | None = None
    target_loss: float | None = None
    budget: str | float | None = None
    """The time the search may take: ``"15m"``, ``"1h30m"``, ``"90s"`` or seconds."""
    quick: bool = False
    """A first answer: one run per configuration and one baseline run (``max_repeats`` 1), no
    seed runs (``seeds`` 1). An explicit ``max_repeats`` or ``seeds`` wins over it."""
    spec_values: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    """The keys set in the spec only (:func:`tuner.core.options.spec_only`: ``[search]`` keys and
    ``objective``), by key: one mapping checked against the table, not a field each (the spec
    checks the values)."""

    def spec_overrides(self) -> dict[str, Any]:
        quick = {"search.max_repeats": 1, "search.seeds": 1} if self.quick else {}
        overrides = super().spec_overrides()
        places = {row.key: row.spec for row in spec_only(None)}
        for key in sorted(self.spec_values.keys() - places.keys()):
            raise ConfigError(f"{key} is no [search] key set in the spec only")
        spec = {str(places[key]): value for key, value in self.spec_values.items()}
        given = {key: value for key, value in (overrides | spec).items() if value is not None}
        return overrides | quick | given


@dataclass(frozen=True, kw_only=True)
class ValidateOptions(SpecOptions, GangOptions):
    """``tuner validate``: one device against several."""

    batch_size: int | None = None
    lr_rule: str = DEFAULT_VALIDATE_RULE
    steps: int = DEFAULT_VALIDATE_STEPS
    loss_reduction: str = LOSS_REDUCTIONS[0]
    accumulation: int | None = None
    output: Path | None = None
    trial_timeout: float = DEFAULT_TRIAL_TIMEOUT_S


def spec_and_plan(
    options: SpecOptions, trial_timeout: float | None = None
) -> tuple[StudySpec, DevicePlan, str | None]:
    """The checked spec (its file, then the options' overrides), the device plan, and the plan's
    notice for the user (``None``: nothing to say); ``trial_timeout`` is checked when given. Raises
    :class:`ConfigError` (``tuner.core.errors.MissingExtraError``: a backend not installed)."""
    from tuner.driver.setup.devices import plan_devices, require_backend
    from tuner.driver.setup.spec_file import load_spec

    overrides = options.spec_overrides()  # first: a bad list is reported before the rest
    if trial_timeout is not None and not (math.isfinite(trial_timeout) and trial_timeout > 0):
        raise ConfigError(
            f"{named('trial_timeout')} must be a positive number of seconds, got {trial_timeout}"
        )
    spec = load_spec(options.spec, overrides)
    require_backend(spec.workload.backend)
    plan, notice = plan_devices(
        options.gpus, options.cpu_replicas, options.memory_limit, backend=spec.workload.backend
    )
    if isinstance(options, GangOptions):  # a command whose trials may span hosts
        plan = plan.across(gang_of(options, spec).hosts)
    return spec, plan, notice


def gang_of(options: GangOptions, spec: StudySpec) -> Gang:
    """The gang ``options`` (else the launcher's environment) say this process is in."""
    from tuner.core.gang import read_gang

    return read_gang(
        options.hosts, options.rank, options.coordinator, os.environ, spec.workload.backend
    )


def checked_spec_and_plan(
    options: SpecOptions, notice: Callable[[str], None] | None, trial_timeout: float | None = None
) -> tuple[StudySpec, DevicePlan]:
    """:func:`spec_and_plan`, the spec's names checked (typos in milliseconds, not after a child
    has imported TensorFlow: :mod:`tuner.driver.setup.names`) and the plan's notice told."""
    from tuner.driver.setup.names import check_names

    spec, plan, told = spec_and_plan(options, trial_timeout)
    check_names(spec)
    if told and notice is not None:
        notice(told)
    return spec, plan
