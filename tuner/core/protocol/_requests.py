"""What the driver asks a child to run: one frozen request type per mode, and its JSON (an object
of ``protocol_version``, ``mode`` and the request's fields, nested as the dataclasses nest).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from tuner.core.devices import DevicePlan
from tuner.core.objective import DEFAULT_OBJECTIVE
from tuner.core.options import DEFAULT_MAX_LR, DEFAULT_MIN_LR
from tuner.core.options import LR_FIND_STEPS as DEFAULT_STEPS
from tuner.core.protocol._codec import (
    PROTOCOL_VERSION,
    VERSION_KEY,
    ProtocolError,
    from_plain,
    load_message,
    to_plain,
)
from tuner.core.spec import DEFAULT_BACKEND, LOSS_REDUCTIONS, KerasObject


@dataclass(frozen=True, kw_only=True)
class Workload:
    """What a run trains: the spec's workload (:class:`tuner.core.spec.WorkloadSpec`)."""

    model: str
    data: str | None
    loss: KerasObject | None = None
    """``None``: the user's build compiles the model with its own."""
    optimizer: KerasObject | None = None
    """``None``: the build's compile gives it."""
    dataset: str | None = None
    backend: str = DEFAULT_BACKEND
    objective: str = DEFAULT_OBJECTIVE


@dataclass(frozen=True, kw_only=True)
class Budget:
    """How much a run trains and evaluates; a probe or validation run has a fixed
    ``steps_per_epoch`` (``epochs`` windows of it)."""

    epochs: int | None = None
    train_samples: int | None = None
    val_samples: int | None = None
    steps_per_epoch: int | None = None


@dataclass(frozen=True, kw_only=True)
class Target:
    """A loss target and its cadence (:mod:`tuner.worker.target`): ``eval_every_samples``, or
    ``None`` for the child to pick the grid's default from ``cadence_batches`` and the budget it
    can count."""

    loss: float
    eval_every_samples: int | None = None
    cadence_batches: tuple[int, ...] = ()


@dataclass(frozen=True, kw_only=True)
class EarlyStop:
    """What a grid trial checks its validation loss against, to stop early as ``dominated``
    (:mod:`tuner.core.dominance`). Its presence makes the trial evaluate the loss after each
    window (its curve may be a later trial's reference)."""

    alpha: float
    """The false-stop rate of the loss-gap test."""
    band: float = 0.0
    """The loss tolerance the recommendation applies (relative)."""
    noise_sd: float | None = None
    """The final loss's relative sd over the base configuration's seeds (``None``: unknown)."""
    noise_runs: int = 0
    noise_samples: tuple[int, ...] = ()
    noise_sds: tuple[float, ...] = ()
    """The seed runs' relative sd at each check; a look uses it or ``noise_sd``, the larger."""
    reference_trial: int | None = None
    reference_samples: tuple[int, ...] = ()
    reference_losses: tuple[float, ...] = ()
    """The best finished configuration's validation loss at its checks."""
    best_time_s: float | None = None
    """Under a loss target: the shortest time to it so far (training seconds)."""
    best_time_trial: int | None = None
    tie_margin: float = 0.0
    """A time within this margin of the best still ties it: no stop."""


@dataclass(frozen=True, kw_only=True)
class LearningRateRule:
    """The learning-rate rule of a run, for the rules that also shape the optimizer
    (``sqrt-adam``, ``linear-warmup``); the warm-up is ``warmup_steps``, else ``warmup_epochs``
    or, with ``sample_budget``, 10 % of the steps."""

    name: str
    ratio: float
    base_lr: float
    learning_rate: float
    warmup_steps: int | None
    warmup_epochs: float
    sample_budget: bool


@dataclass(frozen=True, kw_only=True)
class GangSeat:
    """A run's place in a trial across hosts (:mod:`tuner.core.gang`): its JAX ``process_id`` of
    the plan's hosts, and where their distributed runtime meets."""

    process_id: int
    address: str
    """``HOST:PORT`` of rank 0's runtime (its child serves it)."""
    join_timeout_s: float
    """How long a child waits for every rank to join the runtime before it gives up."""


@dataclass(frozen=True, kw_only=True)
class InspectRequest:
    """Load the workload once and report its sizes, shapes and versions (the workload check)."""

    mode: ClassVar[str] = "inspect"
    workload: Workload
    budget: Budget
    loop: str
    lr_rules: tuple[str, ...]
    max_ratio: int
    """The grid's largest batch ratio (``sqrt-adam`` is checked at it)."""
    noise_scale: bool = True
    """Whether the trials will measure the gradient noise scale (the check tries one step)."""
    replicas: int = 1
    """The trials' replicas: what Keras cannot take on several is refused before the grid."""
    spawned_at: float | None = None
    """When the driver handed the request over (wall clock); set by the runner."""


@dataclass(frozen=True, kw_only=True)
class RunRequest:
    """What every training run (trial, probe, validation) is sent."""

    mode: ClassVar[str]
    plan: DevicePlan
    workload: Workload
    global_batch_size: int
    learning_rate: float
    budget: Budget
    seed: int
    precision: str
    loop: str
    rule: LearningRateRule | None = None
    target: Target | None = None
    model_hyperparameters: Mapping[str, Any] | None = None
    """A hypermodel's values (its defaults where unset)."""
    loss_reduction: str = LOSS_REDUCTIONS[0]
    """How a loop that reduces its own loss does it; only ``tuner validate`` plants another."""
    accumulation_steps: int = 1
    """Micro-steps per update: the child feeds ``global_batch_size / accumulation_steps``."""
    spawned_at: float | None = None
    gang: GangSeat | None = None
    """Set on each rank's copy of a run across hosts (``plan.hosts`` > 1)."""


@dataclass(frozen=True, kw_only=True)
class TrialRequest(RunRequest):
    """One trial of the search (also a baseline or seed run): train, then measure."""

    mode: ClassVar[str] = "trial"
    noise_scale: bool = False
    noise_scale_steps: int | None = None
    early_stop: EarlyStop | None = None
    """Stop early when dominated (``None``: early stopping is off or cannot apply)."""
    input_throughput: float | None = None
    """What the input pipeline delivers alone (samples/s), measured by an earlier trial of the
    same input key: the child reports it instead of timing it again (``None``: it times it)."""


@dataclass(frozen=True, kw_only=True)
class ProbeRequest(RunRequest):
    """The batch-size probe: with ``probe_search`` (:func:`tuner.core.probe.search_state`) up to
    ``probe_sizes_per_child`` sizes in this child; without it, the request's one batch."""

    mode: ClassVar[str] = "probe"
    probe_search: Mapping[str, Any] | None = None
    probe_sizes_per_child: int | None = None


@dataclass(frozen=True, kw_only=True)
class ValidateRequest(RunRequest):
    """A validation run that records every step's loss and each replica's examples, with its
    stochastic layers made deterministic (:mod:`tuner.worker.determinism`)."""

    mode: ClassVar[str] = "validate"
    weights_file: str | None = None
    """Where the child saves every variable before and after its steps (``.npz``)."""


@dataclass(frozen=True, kw_only=True)
class LrFindRequest(RunRequest):
    """The learning-rate range test of ``tuner lr-find`` (:mod:`tuner.core.lr_find`): the rate
    ramped geometrically from ``min_lr`` to ``max_lr`` over ``lr_steps`` steps."""

    mode: ClassVar[str] = "lr_find"
    min_lr: float = DEFAULT_MIN_LR
    max_lr: float = DEFAULT_MAX_LR
    lr_steps: int = DEFAULT_STEPS


Request = InspectRequest | TrialRequest | ProbeRequest | ValidateRequest | LrFindRequest

_TYPES: dict[str, type[Request]] = {
    kind.mode: kind
    for kind in (InspectRequest, TrialRequest, ProbeRequest, ValidateRequest, LrFindRequest)
}
MODES = tuple(_TYPES)


def encode_request(request: Request) -> str:
    """``request`` as the JSON :func:`decode_request` reads."""
    return json.dumps({VERSION_KEY: PROTOCOL_VERSION, "mode": request.mode, **to_plain(request)})


def decode_request(text: str) -> Request:
    """The request :func:`encode_request` wrote; a :class:`ProtocolError` for anything else."""
    fields = load_message(text, "request", "worker")
    mode = fields.pop("mode", None)
    if not isinstance(mode, str) or mode not in _TYPES:
        raise ProtocolError(f"unknown mode {mode!r}; known: {', '.join(MODES)}")
    return from_plain(_TYPES[mode], fields, "request")
