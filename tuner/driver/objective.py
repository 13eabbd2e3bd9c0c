"""The one boundary where a trial runs and its outcome becomes Optuna state and attributes.

``Objective`` is what ``study.optimize`` calls for each grid point: it stores the configuration,
prunes sizes known not to fit without launching them, runs the child, and hands the classified
outcome to :func:`record` — the only place a trial's state is set.
"""

from __future__ import annotations

import math
import os
import socket
from dataclasses import replace
from typing import Any, Protocol

import optuna
from optuna.trial import Trial

from tuner.core import hyperparams
from tuner.core.devices import DevicePlan
from tuner.core.efficiency import statistical_efficiency
from tuner.core.errors import TrialFailed
from tuner.core.outcome import TrialOutcome, classify
from tuner.core.recommend import smallest_oom_batch
from tuner.core.scaling import batch_ratio, scaled_learning_rate
from tuner.core.spec import StudySpec
from tuner.driver.runner import run_child


class SearchObserver(Protocol):
    """What the driver reports while it works (the CLI draws it with rich)."""

    def trial_started(self, index: int, total: int, params: dict[str, Any]) -> None: ...

    def epoch_finished(self, event: dict[str, Any]) -> None: ...

    def trial_finished(self, number: int, outcome: TrialOutcome) -> None: ...

    def note(self, message: str) -> None: ...


class QuietObserver:
    def note(self, message: str) -> None:
        pass

    def trial_started(self, index: int, total: int, params: dict[str, Any]) -> None:
        pass

    def epoch_finished(self, event: dict[str, Any]) -> None:
        pass

    def trial_finished(self, number: int, outcome: TrialOutcome) -> None:
        pass


def device_signature(plan: DevicePlan) -> str:
    """Devices and memory cap: OOM knowledge and throughput carry over only within one signature."""
    if plan.memory_limit_bytes is None:
        return plan.signature
    return f"{plan.signature}, cap {plan.memory_limit_bytes // 2**20} MiB per device"


def workload_dict(spec: StudySpec) -> dict[str, str]:
    return {
        "model": spec.workload.model,
        "data": spec.workload.data,
        "loss": spec.workload.loss,
        "optimizer": spec.workload.optimizer,
    }


def trial_request(
    spec: StudySpec,
    plan: DevicePlan,
    batch: int,
    lr: float,
    mode: str = "trial",
    rule: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The request a child runs: one training run of ``spec``'s workload at ``batch`` and ``lr``
    (``rule``: the learning-rate rule, for the rules that also shape the optimizer)."""
    search = spec.search
    request = {
        "mode": mode,
        "plan": plan.to_dict(),
        "workload": workload_dict(spec),
        "global_batch_size": batch,
        "learning_rate": lr,
        "epochs": search.epochs,
        "seed": search.seed,
        "loop": search.loop_kind,
        "noise_scale": search.noise_scale,
        "noise_scale_steps": search.noise_scale_steps,
        **extra,
    }
    if rule is not None:
        request["rule"] = {
            "name": rule,
            "ratio": batch_ratio(batch, search.base_batch_size),
            "base_lr": search.base_lr,
            "learning_rate": lr,
            "warmup_steps": search.warmup_steps,
            "warmup_epochs": search.warmup_epochs,
        }
    return request


class Objective:
    """Runs one grid point per call; the outcome is recorded on the trial in :meth:`_record`."""

    def __init__(
        self,
        spec: StudySpec,
        plan: DevicePlan,
        timeout_s: float,
        observer: SearchObserver,
        grid_size: int,
        already_done: int,
        probed_oom: int | None = None,
        space: dict[str, Any] | None = None,
    ) -> None:
        self._probed_oom = probed_oom
        self._space = space
        self._spec = spec
        self._plan = plan
        self._timeout_s = timeout_s
        self._observer = observer
        self._grid_size = grid_size
        self._already_done = already_done
        self.launched = 0

    def __call__(self, trial: Trial) -> tuple[float, float]:
        try:
            return self._trial(trial)
        except KeyboardInterrupt:
            trial.set_user_attr("status", "interrupted")
            trial.set_user_attr("error", "stopped by the user")
            raise

    def _model_hyperparameters(self, trial: Trial) -> dict[str, Any] | None:
        """A hypermodel's values for this trial, stored as params: its defaults (one-value
        axes of the grid), or sampled with the batch size and rule in a joint search."""
        if not self._space:
            return None
        if self._spec.search.joint:
            return hyperparams.suggest(trial, self._space["space"])
        return {
            name: trial.suggest_categorical(name, [value])
            for name, value in hyperparams.defaults(self._space["space"]).items()
        }

    def _trial(self, trial: Trial) -> tuple[float, float]:
        search = self._spec.search
        values = self._model_hyperparameters(trial)
        batch = trial.suggest_categorical("global_batch_size", list(search.global_batch_sizes))
        rule = trial.suggest_categorical("lr_rule", list(search.lr_rules))
        lr = scaled_learning_rate(rule, search.base_lr, batch, search.base_batch_size)
        signature = device_signature(self._plan)
        attrs = {
            "global_batch_size": batch,
            "per_replica_batch_size": batch // self._plan.num_replicas,
            "num_replicas": self._plan.num_replicas,
            "learning_rate": lr,
            "lr_rule": rule,
            "device_signature": signature,
            "device_model": self._plan.model,
            "device_count": self._plan.num_replicas,
            "host": socket.gethostname(),
            "worker": f"{socket.gethostname()}:{os.getpid()}",
            "loop": self._spec.search.loop,
            "update_on": self._spec.search.update_on,
            "devices": self._plan.device_names,
        }
        if values is not None:
            attrs["model_hyperparameters"] = values
        for key, value in attrs.items():
            trial.set_user_attr(key, value)
        self._observer.trial_started(self._already_done + self.launched + 1, self._grid_size, attrs)
        outcome = with_efficiency(
            self._run(trial, batch, lr, rule, signature, values), search.base_batch_size, batch
        )
        self._observer.trial_finished(trial.number, outcome)
        return record(trial, outcome)

    def _run(
        self,
        trial: Trial,
        batch: int,
        lr: float,
        rule: str,
        signature: str,
        values: dict[str, Any] | None,
    ) -> TrialOutcome:
        # Out-of-memory is monotone in the batch for one model configuration on one signature.
        config = hyperparams.config_key(values or {})
        oom_at = smallest_oom_batch(trial.study.get_trials(deepcopy=False), signature, config)
        if oom_at is not None and batch >= oom_at:
            self.launched += 1
            same_model = " with these model hyperparameters" if values else ""
            return TrialOutcome(
                "oom-implied",
                error=f"global batch {oom_at} already ran out of memory on {signature}{same_model}",
            )
        probe = self._probed_oom
        if probe is not None and batch >= probe:
            self.launched += 1
            return TrialOutcome(
                "oom-implied",
                error=f"the probe found global batch {probe} out of memory on {signature}",
            )
        self.launched += 1
        run = run_child(
            trial_request(
                self._spec, self._plan, batch, lr, rule=rule, model_hyperparameters=values
            ),
            self._plan.child_environment(),
            self._timeout_s,
            on_event=self._observer.epoch_finished,
        )
        return classify(run, memory_capped=self._plan.memory_limit_bytes is not None)


def with_efficiency(outcome: TrialOutcome, base_batch: int, batch: int) -> TrialOutcome:
    """The outcome with ``statistical_efficiency`` and ``goodput`` added when the trial measured
    its gradient noise scale (relative to the base batch; :mod:`tuner.core.efficiency`)."""
    noise = outcome.attrs.get("gradient_noise_scale")
    if outcome.values is None or noise is None or not (math.isfinite(noise) and noise > 0):
        return outcome
    efficiency = statistical_efficiency(noise, base_batch, batch)
    attrs = {
        **outcome.attrs,
        "statistical_efficiency": efficiency,
        "goodput": outcome.values[1] * efficiency,
    }
    return replace(outcome, attrs=attrs)


def record(trial: Trial, outcome: TrialOutcome) -> tuple[float, float]:
    """Store the outcome on the trial and end it in the state its status maps to."""
    trial.set_user_attr("status", outcome.status)
    for key, value in outcome.attrs.items():
        trial.set_user_attr(key, value)
    if outcome.error:
        trial.set_user_attr("error", outcome.error)
    if outcome.values is not None:
        trial.set_user_attr("final_loss", outcome.values[0])
        trial.set_user_attr("throughput", outcome.values[1])
    if outcome.state == "COMPLETE" and outcome.values is not None:
        return outcome.values
    if outcome.state == "PRUNED":
        raise optuna.TrialPruned(outcome.error or outcome.status)
    raise TrialFailed(f"{outcome.status}: {outcome.error}")
