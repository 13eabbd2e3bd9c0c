"""The seed runs themselves: the base configuration at the base batch with other seeds, each in a
fresh child; under a ``--budget`` only while the rest of the grid still fits after them.
:mod:`tuner.driver.decide.seeds` decides what they measure and stores it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import optuna

from tuner.core.budget import Ledger, RunKey
from tuner.core.devices import DevicePlan
from tuner.core.outcome import classify
from tuner.core.spec import StudySpec
from tuner.driver.children import ChildRunner, first_precision, trial_request
from tuner.driver.decide.early_stop import seed_checks
from tuner.driver.observer import SearchObserver
from tuner.driver.reuse.input_reuse import InputReuse


def run_seeds(
    spec: StudySpec,
    plan: DevicePlan,
    train: Callable[[int], float | None],
    seeds: list[int],
    losses: list[float],
    observer: SearchObserver,
    ledger: Ledger | None,
    reserve: tuple[RunKey, ...],
) -> None:
    """Train the seeds not yet in ``seeds`` (each ``train(seed)``), adding those that ended to
    ``seeds`` and ``losses``; under a budget, stop at the first that does not fit."""
    search = spec.search
    todo = [
        s for s in range(search.run.seed, search.run.seed + search.decision.seeds) if s not in seeds
    ]
    key = (search.grid.base_batch_size, plan.num_replicas)
    for index, seed in enumerate(todo):
        if ledger is not None and not ledger.fits([key], ledger.total_s(reserve))[0]:
            _leave_out(ledger, [key] * (len(todo) - index), observer)
            break
        observer.note(
            f"seed noise: base configuration (global batch {search.grid.base_batch_size}, rule "
            f"{search.grid.lr_rules[0]}) with seed {seed} ({seed - search.run.seed + 1} of "
            f"{search.decision.seeds})…"
        )
        loss = train(seed)
        if loss is not None:
            seeds.append(seed)
            losses.append(loss)


def _leave_out(ledger: Ledger, keys: list[RunKey], observer: SearchObserver) -> None:
    """The seed runs the budget cannot fit beside the rest of the grid, left out and said."""
    ledger.leave_out("seeds", keys)
    observer.phase("seeds", 0)
    observer.note(
        f"seed noise: {len(keys)} seed run(s) left out: they and the rest of the grid would not "
        "fit the budget"
    )


def train_seed(
    spec: StudySpec,
    plan: DevicePlan,
    rule: str,
    seed: int,
    *,
    values: dict[str, Any] | None,
    runner: ChildRunner,
    timeout_s: float,
    observer: SearchObserver,
    curves: list[Any],
    inputs: SeedInputs,
) -> float | None:
    """One seed run in a fresh child; its final loss, or ``None`` (noted) when it failed."""
    search = spec.search
    request = trial_request(
        spec,
        plan,
        search.grid.base_batch_size,
        search.grid.base_lr,
        rule=rule,
        seed=seed,
        precision=first_precision(spec),
        model_hyperparameters=values,
        early_stop=seed_checks(spec),
    )
    request, key, _ = inputs.reuse.prepare(request, inputs.study, inputs.trials)
    run = runner.run(request, plan.child_environment(), timeout_s)
    outcome = classify(run, memory_capped=plan.memory_limit_bytes is not None)
    inputs.reuse.remember(outcome, key)
    if outcome.values is None:
        observer.note(f"seed noise: seed {seed} ended {outcome.status}: {outcome.error}")
        return None
    curve = outcome.attrs.get("val_curve") or outcome.attrs.get("target_curve")
    if curve:
        curves.append(curve)
    return float(outcome.values[0])


@dataclass(frozen=True)
class SeedInputs:
    """The seed runs' reuse of the input pipeline's figure: the study's trials as read once."""

    reuse: InputReuse
    study: optuna.Study
    trials: list[optuna.trial.FrozenTrial]
