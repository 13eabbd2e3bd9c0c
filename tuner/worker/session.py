"""Inside the child: one training run, whatever its backend — the interface the modes talk to.

Throughput is measured per window from epoch-level callbacks only (batch-level hooks would force
a device sync every step). This module imports no backend.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import keras
import numpy as np

from tuner.core.devices import DevicePlan
from tuner.core.errors import WorkloadError
from tuner.core.protocol import Budget, LearningRateRule, RunRequest
from tuner.core.target import CheckPlan
from tuner.core.windows import plan_windows, warmup_excess
from tuner.worker import building, compiled, hypermodel, optim, precision, target
from tuner.worker.callbacks import OnEpoch, OnStep
from tuner.worker.meters import Meter
from tuner.worker.noise import GuardedNoise
from tuner.worker.noise import Meter as NoiseMeter
from tuner.worker.sources import Source


class Loop(Protocol):
    """The model and how it trains, with the evidence ``tuner validate`` reads."""

    devices: list[str]
    model: Any
    step_losses: list[float]

    def run(
        self, data: Any, epochs: int, steps: int | None, on_epoch: OnEpoch, on_step: OnStep | None
    ) -> None: ...
    def learning_rate(self) -> float: ...
    def replica_examples(self) -> list[int]: ...
    def variable_devices(self) -> list[str]: ...
    def variable_copies(self) -> list[list[np.ndarray]]: ...


class Backend(Protocol):
    """What a session needs of its framework besides the loop."""

    name: str

    def evaluator(self, session: Session) -> Callable[[], float]: ...
    def input_throughput(self, session: Session) -> float: ...
    def noise_meter(self, session: Session, steps: int) -> NoiseMeter | None: ...
    def peak_memory_per_device(self) -> list[int | None]: ...
    def device_kind(self) -> str: ...
    def versions(self) -> dict[str, str]: ...


class ModelRecipe:
    """How every model of one run is built and compiled: from the same initial weights, with what
    the build compiled (the spec's names filling the rest), the rule, the precision's scaling."""

    def __init__(
        self,
        request: RunRequest,
        rule: LearningRateRule | None,
        initial: list[np.ndarray],
        precision_name: str,
        inputs: Callable[[], Any] | None = None,
    ) -> None:
        """``inputs``: what a model without weights is built on before its weights are set."""
        self._request = request
        self._inputs = inputs
        self._initial = initial
        self.precision = precision_name
        self.rule = rule
        self.build_args: dict[str, Any] | None = None
        """What the last build compiled (:func:`tuner.worker.compiled.of_build`), else ``None``."""
        self._args: dict[str, Any] | None = None

    @property
    def compiled_by_build(self) -> bool:
        """Whether the user's build compiled the model (its loss and optimizer are kept)."""
        return self.build_args is not None

    def build(self) -> Any:
        """A fresh model at the run's initial weights."""
        request = self._request
        model = hypermodel.build(request.workload.model, request.model_hyperparameters)
        model = building.built(model, self._inputs)
        model.set_weights(self._initial)
        self.build_args = compiled.of_build(model)  # this build's own objects, fresh each time
        return model

    def compile_args(self) -> dict[str, Any]:
        """The arguments of ``model.compile`` for the last built model, rule and precision in."""
        request, workload = self._request, self._request.workload
        args = compiled.compile_args(
            self.build_args, workload, request.learning_rate, workload.model
        )
        shaped = optim.apply_rule(args["optimizer"], self.rule)
        accumulating = optim.accumulating(shaped, request.accumulation_steps)
        args["optimizer"] = precision.scaled(accumulating, self.precision)
        self._args = args
        return args

    def describe(self) -> dict[str, Any] | None:
        """What the run compiled with; ``None`` before :meth:`compile_args`."""
        if self._args is None:
            return None
        given = compiled.spec_loss(self.build_args, self._request.workload)
        return compiled.describe(self._args, self.compiled_by_build, given)


def initial_weights(
    request: RunRequest,
    place: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext,
    inputs: Callable[[], Any] | None = None,
) -> list[np.ndarray]:
    """The model's initial weights from the seed, built once outside any distribution, so every
    run — one device or many — starts from the same numbers; the seed is set again after."""
    keras.utils.set_random_seed(request.seed)
    with place():
        model = hypermodel.build(request.workload.model, request.model_hyperparameters)
        weights: list[np.ndarray] = building.built(model, inputs).get_weights()
    keras.utils.set_random_seed(request.seed)
    return weights


@dataclass
class Session:
    """One training run, ready to train: its devices, data, model inside its loop, and meter."""

    request: RunRequest
    plan: DevicePlan
    backend: Backend
    source: Source
    batch: int
    steps: int
    """Optimizer steps per window (an epoch, when the spec gives epochs)."""
    windows: int
    """Windows the run trains; the first is not timed."""
    recipe: ModelRecipe
    loop: Loop
    train_data: Any
    meter: Meter
    timings: dict[str, float]
    checks: CheckPlan | None = None
    """With a loss target: the windows are its cadence, a check at each window's end."""
    notes: dict[str, Any] = field(default_factory=dict)
    """Result fields the backend adds as it opens the run (``add_loss_note``)."""
    val_logs: dict[str, float] = field(default_factory=dict)
    """The last evaluation's logs, the compiled metrics beside the loss (its evaluator fills
    them: what the trial stores as ``val_metrics``)."""


_HELD: list[Any] = []


def hold_until_exit(*objects: Any) -> None:
    """Keep ``objects`` alive until the child exits (``os._exit`` once its result is written):
    left to Python, destroying a tf.data iterator at the run's end now and then blocks for
    seconds (measured 1.9-3.5 s on some trials)."""
    _HELD.extend(objects)


def plan_run(
    request: RunRequest, batch: int, source: Source
) -> tuple[int, int, CheckPlan | None, LearningRateRule | None]:
    """(steps per window, windows, checks, the rule resolved to steps) of a run at ``batch``: with
    a loss target (and no fixed steps) the windows of its cadence (:func:`target.plan`)."""
    n_train = source.train_size
    _check_fits(batch, n_train)
    checks = target.plan(request, batch, n_train)
    if checks is None:
        steps, windows = _windows(request, batch, source)
        epoch_steps = steps
    else:
        steps, windows = checks.window_steps, checks.windows
        epoch_steps = n_train // batch if n_train else steps  # a warm-up's epoch stays an epoch
    return steps, windows, checks, _resolved_rule(request.rule, epoch_steps, steps * windows)


def train(
    session: Session, noise: GuardedNoise | None = None, check: target.TargetCheck | None = None
) -> None:
    """Run the loop for its windows, the target checked and ``noise`` measured after each."""
    timings = session.timings

    def on_epoch(epoch: int, loss: float, seconds: float) -> bool:
        going_on = session.meter(epoch, loss, seconds)  # the epoch is timed before measuring
        if going_on and check is not None:
            going_on = check()
        if going_on and noise is not None:
            noise.measure()
        return going_on

    mark = time.perf_counter()
    session.loop.run(
        session.train_data,
        session.windows,
        session.steps,
        on_epoch,
        session.meter.step_reporter(session.batch),
    )
    timings["fit_s"] = time.perf_counter() - mark
    timings["noise_scale_s"] = noise.seconds if noise is not None else 0.0
    timings["fit_s"] -= timings["noise_scale_s"]  # measured on separate steps: not training
    if check is not None:
        timings["evaluate_s"] = check.seconds
        timings["fit_s"] -= check.seconds
    tracing = warmup_excess(session.meter.epoch_seconds)  # the warm-up windows' excess
    timings.update(tracing_s=tracing, training_s=timings["fit_s"] - tracing)


def summary(session: Session) -> dict[str, Any]:
    """What every mode reports of a run (its times are ``session.timings``)."""
    loop, meter, recipe, backend = session.loop, session.meter, session.recipe, session.backend
    return {
        "backend": backend.name,
        "device_kind": backend.device_kind(),
        "precision": recipe.precision,
        "devices": loop.devices,
        "num_replicas": session.plan.num_replicas,
        "steps_per_epoch": session.steps,
        "windows": session.windows,
        "window_steps": session.steps,
        "train_samples_used": session.steps * session.windows * session.batch,
        "input_form": session.source.form,
        "input_rebatched": session.source.rebatched,
        "epoch_losses": meter.losses,
        "epoch_throughputs": meter.throughputs,
        "optimizer_learning_rate": loop.learning_rate(),
        "model_parameters": hypermodel.parameter_count(loop.model),
        "model_layers": hypermodel.layer_summary(loop.model),
        "optimizer": optim.describe(loop.model.optimizer, recipe.compiled_by_build, recipe.rule),
        "compile": recipe.describe(),
        "versions": backend.versions(),
        **session.notes,
    }


def scalar_logs(logs: Mapping[Any, Any]) -> dict[str, float]:
    """An evaluation's logs that are numbers, as floats (a confusion matrix is no figure)."""
    found = {}
    for name, value in logs.items():
        with contextlib.suppress(Exception):
            found[str(name)] = float(value)
    return found


def peak_memory_bytes(session: Session) -> int | None:
    """The largest peak of any of the run's devices, or ``None`` where no device can tell."""
    peaks = [peak for peak in session.backend.peak_memory_per_device() if peak is not None]
    return max(peaks) if peaks else None


def _windows(request: RunRequest, batch: int, source: Source) -> tuple[int, int]:
    """(steps per window, windows): a fixed ``steps_per_epoch``; else from ``train_samples``; else
    one window per epoch over a training set of known size."""
    n_train, budget = source.train_size, request.budget
    _check_fits(batch, n_train)
    if budget.steps_per_epoch:
        steps = budget.steps_per_epoch
        return (steps if n_train is None else min(steps, n_train // batch)), _epochs(budget)
    if budget.train_samples:
        try:
            plan = plan_windows(budget.train_samples, batch)
        except ValueError as exc:
            raise WorkloadError(f"{exc}: raise train_samples") from None
        return plan.window_steps, plan.timed_windows + 1
    if n_train is None:
        raise WorkloadError(
            f"the training data of {source.reference} have no known size, so epochs cannot be "
            "counted: give [search] train_samples (or --train-samples)"
        )
    return n_train // batch, _epochs(budget)


def _check_fits(batch: int, n_train: int | None) -> None:
    if n_train is not None and batch > n_train:
        raise WorkloadError(
            f"global batch {batch} is larger than the training set ({n_train} samples)"
        )


def _epochs(budget: Budget) -> int:
    # The driver sends epochs with fixed steps, and whenever there is no sample budget.
    if budget.epochs is None:
        raise ValueError("the request's budget has neither epochs nor train_samples")
    return budget.epochs


def _resolved_rule(
    rule: LearningRateRule | None, epoch_steps: int, total_steps: int
) -> LearningRateRule | None:
    """The rule with a ``linear-warmup`` ramp in epochs turned into steps (with a sample budget,
    which has no epochs, the first 10 % of the steps)."""
    if rule is not None and rule.name == "linear-warmup" and not rule.warmup_steps:
        if rule.sample_budget:
            return replace(rule, warmup_steps=max(1, total_steps // 10))
        return replace(rule, warmup_steps=max(1, round(rule.warmup_epochs * epoch_steps)))
    return rule
