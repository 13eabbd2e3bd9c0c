"""What a child process is asked to run: the typed requests of :mod:`tuner.core.protocol`, built
from the spec in one place (a variant, another batch or no target, is a ``dataclasses.replace``
of one), and :class:`ChildRunner`, what runs one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields, replace
from typing import Any, Protocol

from tuner.core.devices import DevicePlan
from tuner.core.outcome import ChildRun
from tuner.core.protocol import (
    Budget,
    EarlyStop,
    Event,
    InspectRequest,
    LearningRateRule,
    ProbeRequest,
    Request,
    Target,
    TrialRequest,
    ValidateRequest,
    Workload,
)
from tuner.core.scaling import batch_ratio
from tuner.core.spec import StudySpec
from tuner.core.target import budget_samples, check_cadence, default_cadence

OnEvent = Callable[[Event], None]
"""Called with each event the child reports while it runs, in order."""


class ChildRunner(Protocol):
    """Runs one request to its end and says what it left behind; handed to the driver's steps
    (:func:`tuner.driver.children.child_runner`), so that the process runner, the instant
    stand-in and a test's fake are interchangeable."""

    def run(
        self,
        request: Request,
        env: dict[str, str],
        timeout_s: float,
        on_event: OnEvent | None = None,
    ) -> ChildRun:
        """Run ``request`` with ``env`` added to the child's environment, for at most
        ``timeout_s`` seconds, passing its events to ``on_event``; return the finished run
        (a run that timed out says so, it does not raise)."""
        ...


def workload_ref(spec: StudySpec) -> Workload:
    """The workload as a request carries it: the spec's fields of the same names."""
    return Workload(**{f.name: getattr(spec.workload, f.name) for f in fields(Workload)})


def budget_dict(spec: StudySpec) -> dict[str, int | None]:
    """The budget's fields as a training key hashes them (stored keys: their names stay)."""
    return {
        "epochs": spec.search.run.epochs,
        "train_samples": spec.search.run.train_samples,
        "val_samples": spec.search.run.val_samples,
    }


def budget_of(spec: StudySpec, **fixed: int | None) -> Budget:
    """How much a run of ``spec`` trains and evaluates; ``fixed`` overrides a field (a probe's
    one epoch of fixed steps)."""
    return replace(Budget(**budget_dict(spec)), **fixed)


def target_of(spec: StudySpec, n_train: int | None = None) -> Target | None:
    """The loss target and its cadence as a request carries them (``None`` without a target); a
    cadence that does not suit the grid raises ``ConfigError``. With an epochs budget and
    ``n_train`` unknown, the cadence is ``None``: the child picks it from its own ``n_train``."""
    search = spec.search
    if search.run.target_loss is None:
        return None
    cadence = search.run.eval_every_samples
    batches = search.grid.global_batch_sizes
    budget = budget_samples(search.run.train_samples, search.run.epochs, n_train)
    if cadence is not None:
        check_cadence(cadence, batches, budget)
    elif budget is not None:
        cadence = default_cadence(batches, budget)
    return Target(
        loss=search.run.target_loss, eval_every_samples=cadence, cadence_batches=tuple(batches)
    )


def first_precision(spec: StudySpec) -> str:
    """The precision of the runs outside the grid (probe, baseline, seeds, validate)."""
    return spec.search.grid.precisions[0]


def inspect_request(
    spec: StudySpec, *, noise_scale: bool | None = None, replicas: int = 1
) -> InspectRequest:
    """Load ``spec``'s workload once and report its sizes, shapes and versions; with one step of
    the gradient noise meter where the trials will measure it (``noise_scale``, default the
    spec's), and what the trials' ``replicas`` cannot take refused."""
    search = spec.search
    return InspectRequest(
        workload=workload_ref(spec),
        budget=budget_of(spec),
        loop=search.run.loop_kind,
        lr_rules=tuple(search.grid.lr_rules),
        max_ratio=max(search.grid.batch_multipliers),
        noise_scale=search.run.noise_scale if noise_scale is None else noise_scale,
        replicas=replicas,
    )


def rule_of(spec: StudySpec, rule: str, batch: int, lr: float) -> LearningRateRule:
    """Learning-rate rule ``rule`` at ``batch`` and ``lr`` as a request carries it."""
    search = spec.search
    return LearningRateRule(
        name=rule,
        ratio=batch_ratio(batch, search.grid.base_batch_size),
        base_lr=search.grid.base_lr,
        learning_rate=lr,
        warmup_steps=search.run.warmup_steps,
        warmup_epochs=search.run.warmup_epochs,
        sample_budget=search.run.train_samples is not None,
    )


def trial_request(
    spec: StudySpec,
    plan: DevicePlan,
    batch: int,
    lr: float,
    rule: str | None = None,
    *,
    seed: int | None = None,
    n_train: int | None = None,
    precision: str | None = None,
    model_hyperparameters: dict[str, Any] | None = None,
    early_stop: EarlyStop | None = None,
) -> TrialRequest:
    """One training run of ``spec``'s workload at ``batch`` and ``lr`` (``rule``: the
    learning-rate rule, for the rules that also shape the optimizer; ``seed`` of initial weights
    and data order and ``precision``, default the spec's (first); ``n_train``, when known, for the
    target's cadence under an epochs budget; ``early_stop``:
    :mod:`tuner.driver.decide.early_stop`)."""
    search = spec.search
    return TrialRequest(
        plan=plan,
        workload=workload_ref(spec),
        global_batch_size=batch,
        learning_rate=lr,
        budget=budget_of(spec),
        seed=search.run.seed if seed is None else seed,
        precision=precision or first_precision(spec),
        loop=search.run.loop_kind,
        rule=None if rule is None else rule_of(spec, rule, batch, lr),
        target=target_of(spec, n_train),
        model_hyperparameters=model_hyperparameters,
        noise_scale=search.run.noise_scale,
        noise_scale_steps=search.run.noise_scale_steps,
        early_stop=early_stop,
    )


def probe_request(
    spec: StudySpec,
    plan: DevicePlan,
    batch: int,
    lr: float,
    *,
    steps: int,
    search_state: dict[str, Any] | None = None,
    sizes_per_child: int | None = None,
) -> ProbeRequest:
    """A probe of ``spec``'s workload on ``plan`` from ``batch``: ``steps`` steps of one epoch
    per size at the spec's first precision, with the probe's ``search_state`` (or only
    ``batch``) and at most ``sizes_per_child`` sizes in the child."""
    return ProbeRequest(
        plan=plan,
        workload=workload_ref(spec),
        global_batch_size=batch,
        learning_rate=lr,
        budget=budget_of(spec, epochs=1, steps_per_epoch=steps),
        seed=spec.search.run.seed,
        precision=first_precision(spec),
        loop=spec.search.run.loop_kind,
        probe_search=search_state,
        probe_sizes_per_child=sizes_per_child,
    )


def validate_request(
    spec: StudySpec, plan: DevicePlan, batch: int, lr: float, *, steps: int, loss_reduction: str
) -> ValidateRequest:
    """About ``steps`` steps of ``spec``'s workload on ``plan`` that report per-step losses and
    per-replica counts for ``tuner validate``."""
    windows = spec.search.run.epochs or 2
    return ValidateRequest(
        plan=plan,
        workload=workload_ref(spec),
        global_batch_size=batch,
        learning_rate=lr,
        # About ``steps`` steps over the spec's epochs (two windows under a sample budget).
        budget=Budget(
            epochs=windows,
            steps_per_epoch=max(1, steps // windows),
            val_samples=spec.search.run.val_samples,
        ),
        seed=spec.search.run.seed,
        precision=first_precision(spec),
        loop=spec.search.run.loop_kind,
        loss_reduction=loss_reduction,
    )
