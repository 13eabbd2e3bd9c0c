"""The one boundary where a trial runs and its outcome becomes Optuna state and attributes:
``Objective`` stores the configuration, asks the pre-launch rules (:mod:`.prelaunch`), else runs
the child, and hands the outcome to :func:`record`, the only place a trial's state is set.
"""

from __future__ import annotations

import math
import os
import socket
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from typing import Any

import optuna
from optuna.trial import FrozenTrial, Trial

from tuner.core import hyperparams
from tuner.core.configurations import PRECISION, without_batch_sizes
from tuner.core.devices import DevicePlan
from tuner.core.efficiency import goodput, statistical_efficiency
from tuner.core.errors import TrialFailed
from tuner.core.outcome import NOT_LAUNCHED, TrialOutcome, classify
from tuner.core.protocol import EarlyStop
from tuner.core.record import decode, decode_study, store
from tuner.core.scaling import scaled_learning_rate
from tuner.core.spec import StudySpec
from tuner.core.trials import HEARTBEAT_S
from tuner.driver.children import ChildRunner, trial_request
from tuner.driver.decide.early_stop import early_stop_for
from tuner.driver.decide.racing import chain, measured
from tuner.driver.observer import SearchObserver, passed_on
from tuner.driver.reuse.input_reuse import InputReuse
from tuner.driver.reuse.keys import training_key
from tuner.driver.trial.accumulation import Accumulation
from tuner.driver.trial.extend import rule_choices
from tuner.driver.trial.grid import (
    stores_batch_as_category,
    suggest_global_batch,
    suggest_precision,
)
from tuner.driver.trial.prelaunch import Point, before_launch
from tuner.driver.trial.spooled import spool_outcome
from tuner.storage.guarded import guard_of, storage_call


class Objective:
    """Runs one grid point per call; the outcome is stored on the trial by :func:`record`.
    ``total`` and ``already_done`` only count the trials for the observer; ``probed_oom`` is the
    smallest global batch a probe found out of memory; ``space`` a hypermodel's search space."""

    def __init__(
        self,
        spec: StudySpec,
        plan: DevicePlan,
        timeout_s: float,
        observer: SearchObserver,
        total: int,
        already_done: int,
        probed_oom: int | None = None,
        space: dict[str, Any] | None = None,
        *,
        runner: ChildRunner,
    ) -> None:
        self._spec, self._plan, self._runner = spec, plan, runner
        self._timeout_s, self._observer = timeout_s, observer
        self.total = total
        """Runs the progress counts: the grid (or joint budget), plus repeats once racing queues
        them (:func:`tuner.driver.decide.racing.race` extends it)."""
        self._already_done, self._probed_oom, self._space = already_done, probed_oom, space
        self.launched = 0
        """Trials this objective ended, launched or pruned without a launch (oom-implied,
        bracketed)."""
        self._on_event = partial(passed_on, observer)
        self._failures: dict[str, tuple[int, tuple[Any, ...]]] = {}
        self.stopped: str | None = None
        """Why the search must stop (:meth:`_watch`), or ``None``."""
        self._early_stop: EarlyStop | None = None
        """What the next child is compared with to stop early as dominated
        (:mod:`tuner.driver.decide.early_stop`)."""
        self._accumulation = Accumulation(
            spec, plan, runner, timeout_s, observer, self._on_event, lambda: self._probed_oom
        )
        self._inputs = InputReuse()

    def __call__(
        self, trial: Trial, stored: Sequence[FrozenTrial] | None = None
    ) -> tuple[float, float]:
        """Run ``trial``; ``stored``: the study's trials as the loop just read them (the trial
        decides with them: same training, a smaller batch out of memory), else it reads them."""
        try:
            return self._trial(trial, stored)
        except KeyboardInterrupt:
            interrupted = {"status": "interrupted", "error": "stopped by the user"}
            storage_call(trial.study, store, trial, interrupted)
            raise

    def _configure(
        self, trial: Trial, stored: Sequence[FrozenTrial] | None
    ) -> tuple[Sequence[FrozenTrial], dict[str, Any], dict[str, Any] | None]:
        """Pick and store the trial's configuration; the study's trials, its attributes and
        a hypermodel's values. One storage step: run again whole after an outage (a parameter
        already stored is read back, not sampled again)."""
        search = self._spec.search
        values = self._model_hyperparameters(trial)
        if stored is None:
            stored = trial.study.get_trials(deepcopy=False)
        categorical = search.grid.joint or stores_batch_as_category(stored)
        batch = suggest_global_batch(trial, search.grid.global_batch_sizes, categorical=categorical)
        rule = trial.suggest_categorical("lr_rule", rule_choices(self._spec, stored))
        precision = suggest_precision(trial, search.grid.precisions)
        lr = scaled_learning_rate(rule, search.grid.base_lr, batch, search.grid.base_batch_size)
        attrs = self._configuration(batch, rule, lr, values)
        attrs[PRECISION] = precision
        guard = guard_of(trial.study)
        attrs[HEARTBEAT_S] = guard.interval_s if guard is not None else 0.0
        attrs["training_key"] = training_key(self._spec, self._plan, batch, rule, values, precision)
        # The loop wrote the trial's first heartbeat before this (tuner.storage.guarded.beating):
        # a trial that holds its heartbeat_s has beaten, one without is "unborn" (resume.py).
        store(trial, attrs)  # other workers see the configuration at once
        return stored, attrs, values

    def _trial(self, trial: Trial, stored: Sequence[FrozenTrial] | None) -> tuple[float, float]:
        stored, attrs, values = storage_call(trial.study, self._configure, trial, stored)
        repeat_of = decode(trial).reuse.repeat_of
        position = self._already_done + self.launched + 1
        self.launched += 1
        earlier = chain(stored, int(repeat_of)) if repeat_of is not None else []
        point = Point(
            self._spec,
            trial.number,
            position,
            self.total,
            attrs,
            stored,
            earlier,
            repeat=repeat_of is not None,
            probed_oom=self._probed_oom,
            seed_noise=lambda: storage_call(trial.study, decode_study, trial.study).seed_noise,
        )
        outcome = self._measure(trial, point, values)
        self._observer.trial_finished(trial.number, outcome)
        self._watch(trial.number, attrs, outcome)
        return record(trial, outcome)

    def _watch(self, number: int, attrs: dict[str, Any], outcome: TrialOutcome) -> None:
        """Set :attr:`stopped` when this trial failed with the error a trial at another batch
        failed with: the configuration does not cause it (the model, the data or the machine
        does), so every remaining point would fail the same way. The batch sizes are taken out
        of the message first (a shape names them)."""
        if outcome.status != "error" or not outcome.error:
            return
        if outcome.error.startswith("bad measurement"):  # the run trained: its numbers are off
            return
        point = (
            attrs["global_batch_size"],
            attrs["lr_rule"],
            attrs.get(PRECISION),
            hyperparams.config_key(attrs.get("model_hyperparameters") or {}),
        )
        message = without_batch_sizes(outcome.error, attrs)
        first, first_point = self._failures.setdefault(message, (number, point))
        # At one batch, two rules failing alike say the batch fails (the rule `batch-failed`
        # prunes its other rates); only a second batch says that no point would train.
        if first_point[0] != point[0]:
            self.stopped = (
                f"trials #{first} and #{number} failed with the same error at two batch sizes, "
                f"so no point of the grid would train: {outcome.error[:300]} "
                "(the search stopped; the trials already run are stored)"
            )

    def _measure(self, trial: Trial, point: Point, values: dict[str, Any] | None) -> TrialOutcome:
        """The trial's outcome: the pre-launch rules first (:func:`.prelaunch.before_launch`, the
        one place it is decided without a child), else its run; then its micro-steps, racing's
        runs before it (``point.earlier``, when it is a repeat) and its efficiency."""
        decided = before_launch(point)
        if decided is not None and decided.rule.final:  # e.g. same training: nothing more
            if decided.rule.line is not None:
                self._observer.note(decided.rule.line(point, decided.outcome))
            return decided.outcome
        search, attrs, earlier, stored = self._spec.search, point.attrs, point.earlier, point.stored
        if earlier:
            self._observer.note(
                f"trial {trial.number}: repeat of #{earlier[0].number} (run "
                f"{decode(trial).reuse.repeat_index or '?'} of at most "
                f"{search.decision.max_repeats})"
            )
        self._observer.trial_started(trial.number, point.position, self.total, attrs)
        batch, rule, lr = attrs["global_batch_size"], attrs["lr_rule"], attrs["learning_rate"]
        precision = attrs[PRECISION]
        self._early_stop, skipped = None, None  # a repeat is never stopped early
        if not earlier:  # what the child compares itself with, or why no rule can stop it
            self._early_stop, skipped = early_stop_for(
                self._spec, self._plan.device_signature, point.seed_noise, stored, batch
            )
        outcome = (
            decided.outcome
            if decided is not None
            else self._run(batch, lr, rule, values, precision, (trial.study, stored))
        )
        outcome = self._accumulation.reach(trial.number, outcome, attrs, values, stored)
        outcome = measured(outcome, earlier, target=search.run.target_loss is not None)
        if skipped and outcome.status not in NOT_LAUNCHED:
            outcome = replace(outcome, attrs={**outcome.attrs, "early_stop_skipped": skipped})
        return with_efficiency(outcome, search.grid.base_batch_size, batch)

    def _model_hyperparameters(self, trial: Trial) -> dict[str, Any] | None:
        """A hypermodel's values for this trial, stored as params: its defaults (one-value
        axes of the grid), or sampled with the batch size and rule in a joint search."""
        if not self._space:
            return None
        if self._spec.search.grid.joint:
            return hyperparams.suggest(trial, self._space["space"])
        return {
            name: trial.suggest_categorical(name, [value])
            for name, value in hyperparams.defaults(self._space["space"]).items()
        }

    def _configuration(
        self, batch: int, rule: str, lr: float, values: dict[str, Any] | None
    ) -> dict[str, Any]:
        """The user attributes that say what the trial runs, where and by whom."""
        plan = self._plan
        attrs = {
            "global_batch_size": batch,
            "per_replica_batch_size": batch // plan.num_replicas,
            "num_replicas": plan.num_replicas,
            "learning_rate": lr,
            "lr_rule": rule,
            "device_signature": plan.device_signature,
            "device_model": plan.model,
            "device_count": plan.num_replicas,
            "host": socket.gethostname(),
            "worker": f"{socket.gethostname()}:{os.getpid()}",
            "loop": self._spec.search.run.loop,
            "update_on": self._spec.search.run.update_on,
            "devices": plan.device_names,
        }
        if values is not None:
            attrs["model_hyperparameters"] = values
        return attrs

    def extend(self, runs: int) -> None:
        """Count ``runs`` more runs (racing's repeats) in the progress total."""
        self.total += runs

    def _run(
        self,
        batch: int,
        lr: float,
        rule: str,
        values: dict[str, Any] | None,
        precision: str,
        study: tuple[optuna.Study, Sequence[FrozenTrial]],
    ) -> TrialOutcome:
        """Train the grid point in a child and classify what it left behind; an input pipeline
        ``study``'s trials already measured is not measured again (:mod:`.input_reuse`)."""
        request = trial_request(
            self._spec,
            self._plan,
            batch,
            lr,
            rule=rule,
            precision=precision,
            model_hyperparameters=values,
            early_stop=self._early_stop,
        )
        request, input_key, input_from = self._inputs.prepare(request, *study)
        run = self._runner.run(
            request, self._plan.child_environment(), self._timeout_s, on_event=self._on_event
        )
        outcome = classify(run, memory_capped=self._plan.memory_limit_bytes is not None)
        return self._inputs.record(outcome, input_key, input_from)


def with_efficiency(outcome: TrialOutcome, base_batch: int, batch: int) -> TrialOutcome:
    """The outcome with ``statistical_efficiency`` and ``goodput`` added when the trial measured
    its gradient noise scale (relative to the base batch; :mod:`tuner.core.efficiency`)."""
    noise = outcome.attrs.get("gradient_noise_scale")
    if outcome.values is None or noise is None or not (math.isfinite(noise) and noise > 0):
        return outcome
    attrs = {
        **outcome.attrs,
        "statistical_efficiency": statistical_efficiency(noise, base_batch, batch),
        "goodput": goodput(outcome.values[1], noise, base_batch, batch),
    }
    return replace(outcome, attrs=attrs)


def record(trial: Trial, outcome: TrialOutcome) -> tuple[float, float]:
    """Store the outcome on the trial and end it in the state its status maps to."""
    attrs = {"status": outcome.status, **outcome.attrs}
    if outcome.error:
        attrs["error"] = outcome.error
    if outcome.values is not None:
        attrs["final_loss"], attrs["throughput"] = outcome.values
    # The spool first (the storage may fail), with the configuration: it replays the whole record.
    spool_outcome(trial, outcome.state, outcome.values, {**decode(trial).flat, **attrs})
    # Written before the loop tells the state: a finished trial holds them all (a trial taken
    # over meanwhile refuses them here).
    storage_call(trial.study, store, trial, attrs)
    if outcome.state == "COMPLETE" and outcome.values is not None:
        return outcome.values
    if outcome.state == "PRUNED":
        raise optuna.TrialPruned(outcome.error or outcome.status)
    raise TrialFailed(f"{outcome.status}: {outcome.error}")
