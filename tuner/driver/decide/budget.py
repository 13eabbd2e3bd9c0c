"""The budget's effects: timing every training child, the grid's next runs, and the closing line
stored on the study (:data:`tuner.core.budget.BUDGET`); :mod:`tuner.core.budget` decides.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import optuna

from tuner.core.budget import BUDGET, Ledger, RunKey, left_out_line, quick_line
from tuner.core.devices import DevicePlan
from tuner.core.hyperparams import defaults
from tuner.core.outcome import ChildRun
from tuner.core.protocol import Request, TrialRequest
from tuner.core.racing import gaps_to_best
from tuner.core.recommend import default_policy, higher_is_better
from tuner.core.record import decode, store_study
from tuner.core.spec import StudySpec
from tuner.core.trials import settled_grid_points
from tuner.driver.children import ChildRunner, OnEvent
from tuner.driver.decide.racing import applied_tolerance, race_entries, still_tied
from tuner.driver.observer import SearchObserver
from tuner.driver.reuse.keys import training_key
from tuner.storage.guarded import storage_call

CLOCK = time.monotonic
"""The budget's clock (a test moves a fake one as its stand-in children "train")."""


def _now() -> float:
    return CLOCK()


def ledger_of(spec: StudySpec) -> Ledger | None:
    """The budget of a search that starts now (``None`` without ``--budget``)."""
    budget = spec.search.decision.budget
    return None if budget is None else Ledger(budget, _now)


class TimedRunner:
    """A :class:`~tuner.driver.children.ChildRunner` telling ``ledger`` each training's time."""

    def __init__(self, runner: ChildRunner, ledger: Ledger) -> None:
        self._runner = runner
        self._ledger = ledger

    def run(
        self,
        request: Request,
        env: dict[str, str],
        timeout_s: float,
        on_event: OnEvent | None = None,
    ) -> ChildRun:
        started = _now()
        run = self._runner.run(request, env, timeout_s, on_event)
        if isinstance(request, TrialRequest):
            key = (request.global_batch_size, request.plan.num_replicas)
            self._ledger.measured(key, _now() - started)
        return run

    def __getattr__(self, name: str) -> Any:  # the wrapped runner's other methods
        return getattr(self._runner, name)


def baseline_runs(spec: StudySpec) -> int:
    """The single-device baseline's runs per precision: ``max_repeats``, one under a budget."""
    return 1 if spec.search.decision.budget is not None else spec.search.decision.max_repeats


def budget_baseline(spec: StudySpec, plan: DevicePlan, ledger: Ledger) -> StudySpec:
    """``spec`` as the baseline runs it under a budget: once per precision."""
    extra = (spec.search.decision.max_repeats - 1) * len(spec.search.grid.precisions)
    ledger.leave_out("baseline", [(spec.search.grid.base_batch_size, 1)] * extra)
    once = replace(spec.search.decision, max_repeats=1)
    return replace(spec, search=replace(spec.search, decision=once))


def timed(runner: ChildRunner, ledger: Ledger | None) -> ChildRunner:
    """``runner``, timed for ``ledger`` when there is one."""
    return runner if ledger is None else TimedRunner(runner, ledger)


def grid_left(
    trials: Sequence[optuna.trial.FrozenTrial],
    grid: Sequence[tuple[Any, ...]],
    plan: DevicePlan,
    key_of: Callable[[tuple[Any, ...]], str] | None = None,
) -> tuple[RunKey, ...]:
    """The run keys of the grid points no run has settled, by batch (distinct with ``key_of``)."""
    settled = settled_grid_points(trials)
    left = sorted(point for point in grid if point not in settled)
    if key_of is not None:
        seen = {decode(t).configuration.training_key for t in trials if t.state.is_finished()}
        firsts: dict[str, tuple[Any, ...]] = {}  # each training once, at its first point
        for point in left:
            firsts.setdefault(key_of(point), point)
        left = [point for key, point in firsts.items() if key not in seen]
    return tuple((int(point[0]), plan.num_replicas) for point in left)


def training_key_of(
    spec: StudySpec, plan: DevicePlan, space: dict[str, Any] | None
) -> Callable[[tuple[Any, ...]], str]:
    """A grid point's training key (:func:`tuner.driver.reuse.keys.training_key`)."""
    values = defaults(space["space"]) if space else None

    def key_of(point: tuple[Any, ...]) -> str:
        precision = point[2] if len(point) > 2 else None
        return training_key(spec, plan, int(point[0]), str(point[1]), values, precision)

    return key_of


def close(
    study: optuna.Study,
    spec: StudySpec,
    plan: DevicePlan,
    ledger: Ledger | None,
    observer: SearchObserver,
) -> None:
    """At the end of a budgeted or single-run search: say what it left out (and, with one run per
    configuration, which differences it cannot resolve) and store it as :data:`BUDGET`."""
    search = spec.search
    if ledger is None and (search.grid.joint or search.decision.max_repeats > 1):
        return
    trials = storage_call(study, study.get_trials, deepcopy=False)
    tolerance = applied_tolerance(study, spec, plan)[0]
    lines, record = [], {}
    if ledger is not None:
        joint = search.grid.joint
        tied = None if joint else still_tied(trials, spec, plan.device_signature, tolerance)
        line = left_out_line(ledger, tied)
        lines.append(line)
        record = ledger.record(line, tied)
    if search.decision.max_repeats == 1 and not search.grid.joint:
        policy = default_policy(search.run.target_loss)
        entries = race_entries(trials, spec, plan.device_signature, tolerance)
        gaps = gaps_to_best(entries, higher_is_better=higher_is_better(policy))
        what = "time-to-target" if search.run.target_loss is not None else "throughput"
        line = quick_line(gaps, what, seeds=search.decision.seeds > 1)
        lines.append(line)
        record.update(quick=True, unresolved=[n for n, _ in gaps], quick_line=line)
    for line in lines:
        observer.note(line)
    storage_call(study, store_study, study, BUDGET, record)
