"""Seed noise: the base configuration trained with other seeds, right after the grid's base trial,
for a loss tolerance that is not inside the noise (``docs/guide/search.md``, "Seed noise"). The
spread is stored on the study per device signature (``seed_noise``: seed runs are not trials).
Several workers may each measure it (the last record stays): time, never correctness.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from tuner.core import hyperparams
from tuner.core.budget import Ledger, RunKey
from tuner.core.configurations import status_of
from tuner.core.devices import DevicePlan
from tuner.core.dominance import check_noise, measures_seed_noise
from tuner.core.outcome import classify
from tuner.core.record import decode, decode_study, store_study
from tuner.core.spec import StudySpec
from tuner.core.stats import relative_spread
from tuner.core.trials import is_pending, is_settled
from tuner.driver.children import ChildRunner, first_precision, trial_request
from tuner.driver.decide.early_stop import curve_of, seed_checks
from tuner.driver.decide.racing import applied_tolerance, own_run
from tuner.driver.observer import SearchObserver, observed
from tuner.driver.reuse.input_reuse import InputReuse
from tuner.driver.reuse.keys import training_key
from tuner.storage.guarded import storage_call

SEED_NOISE = "seed_noise"
"""The study attribute: ``{device_signature: {"seeds", "final_losses", "spread",
"global_batch_size", "lr_rule", "precision"}}``, with early stops the seed runs' ``curves``."""


def measure_seed_noise(
    study: optuna.Study,
    spec: StudySpec,
    plan: DevicePlan,
    *,
    space: dict[str, Any] | None,
    runner: ChildRunner,
    timeout_s: float,
    observer: SearchObserver,
    ledger: Ledger | None = None,
    reserve: tuple[RunKey, ...] = (),
) -> dict[str, Any] | None:
    """Measure (or find stored) the seed noise of ``plan``'s devices, or ``None`` (off, or not
    measured: then the next run tries). Under a budget a seed run starts only if ``reserve`` (the
    rest of the grid) still fits after it."""
    search = spec.search
    if search.grid.joint or search.decision.seeds < 2:
        return None
    if not measures_seed_noise(search):
        # Trials stop at the target, so their final losses sit just under it: their spread
        # would measure the cadence, not the seeds, and time to target needs no loss tolerance.
        observer.note("seed noise: not measured with a loss target (trials stop at the target)")
        return None
    stored: dict[str, Any] | None = _noise(study).get(plan.device_signature)
    if stored is not None:
        observer.phase("seeds", 0)
        return stored
    values = _defaults(space)
    trials = storage_call(study, study.get_trials, deepcopy=False)
    base = _base_runs(trials, _base_key(spec, plan, values))
    if any(is_pending(t) for t in base):
        observer.note("seed noise: the base configuration still runs on another worker; skipped")
        observer.phase("seeds", 0)
        return None
    seeds, losses = _grid_seed(base, search.run.seed)
    observer.phase("seeds", search.decision.seeds - len(seeds))
    runs = observed(runner, observer, f"seed run · batch {search.grid.base_batch_size}")
    curves: list[Any] = []  # each seed run's [samples, loss] (early stops: the noise per check)
    train = partial(
        train_seed, spec, plan, search.grid.lr_rules[0], values=values, runner=runs,
        timeout_s=timeout_s, observer=observer, curves=curves, inputs=InputReuse(),
        read=(study, trials),
    )  # fmt: skip
    rule = shown_rule(spec, plan, values, base)  # as the trials table names it
    _run_seeds(spec, plan, train, seeds, losses, observer, ledger, reserve, rule)
    return _recorded(study, spec, plan, base, seeds, losses, curves, observer)


def _run_seeds(
    spec: StudySpec,
    plan: DevicePlan,
    train: Callable[[int], float | None],
    seeds: list[int],
    losses: list[float],
    observer: SearchObserver,
    ledger: Ledger | None,
    reserve: tuple[RunKey, ...],
    rule: str,
) -> None:
    """Train the seeds not yet in ``seeds``, adding those that ended to ``seeds`` and ``losses``;
    under a budget, stop at the first that does not fit beside ``reserve``."""
    search = spec.search
    todo = [
        s for s in range(search.run.seed, search.run.seed + search.decision.seeds) if s not in seeds
    ]
    key = (search.grid.base_batch_size, plan.num_replicas)
    for index, seed in enumerate(todo):
        if ledger is not None and not ledger.fits([key], ledger.total_s(reserve))[0]:
            left = len(todo) - index
            ledger.leave_out("seeds", [key] * left)
            observer.phase("seeds", 0)
            observer.note(
                f"seed noise: {left} seed run(s) left out: they and the rest of the grid would "
                "not fit the budget"
            )
            break
        observer.note(
            f"seed noise: base configuration (global batch {search.grid.base_batch_size}, rule "
            f"{rule}) with seed {seed} ({seed - search.run.seed + 1} of {search.decision.seeds})…"
        )
        loss = train(seed)
        if loss is not None:
            seeds.append(seed)
            losses.append(loss)


def _recorded(
    study: optuna.Study,
    spec: StudySpec,
    plan: DevicePlan,
    base: list[FrozenTrial],
    seeds: list[int],
    losses: list[float],
    curves: list[Any],
    observer: SearchObserver,
) -> dict[str, Any] | None:
    """The seed-noise record of the runs that ended, stored and said with the tolerance it sets;
    ``None`` when too few ended. Under a loss target: the seed runs' curves up to the target (the
    early stops' noise per check), without ``final_losses`` — losses at the target are no seed
    noise and set no loss tolerance."""
    search = spec.search
    what = {
        "seeds": seeds,
        "global_batch_size": search.grid.base_batch_size,
        "lr_rule": search.grid.lr_rules[0],
        "precision": first_precision(spec),
    }
    if search.run.target_loss is not None:
        done = [t for t in base if t.state == TrialState.COMPLETE and curve_of(t)]
        shared = ([curve_of(min(done, key=lambda t: t.number))] if done else []) + curves
        samples, sds = check_noise(shared)
        if not sds:
            observer.note("seed noise not measured (fewer than 2 seeds trained): no loss-gap stops")
            return None
        record = {**what, "target_loss": search.run.target_loss, "curves": curves}
        store(study, SEED_NOISE, plan, record)
        observer.note(
            f"seed noise (early stops under the target): the validation loss varies {sds[-1]:.1%} "
            f"between {len(shared)} seeds at {samples[-1]} samples"
        )
        return record
    spread = relative_spread(losses)
    if spread is None:
        observer.note("seed noise not measured (fewer than 2 seeds trained); the tolerance applies")
        return None
    record = {
        **what,
        "final_losses": losses,
        "spread": spread,
        **({"curves": curves} if curves else {}),
    }
    store(study, SEED_NOISE, plan, record)
    observer.note(
        f"seed noise: final losses {', '.join(f'{loss:.4g}' for loss in losses)} over seeds "
        f"{', '.join(map(str, seeds))}: spread "
        f"{spread:.1%}; {applied_tolerance(study, spec, plan)[1]}"
    )
    return record


def wants_seeds(study: optuna.Study, spec: StudySpec, plan: DevicePlan) -> bool:
    """Whether this search measures the seed noise: on (``seeds`` 2+, a grid; under a loss
    target for early stops only) and not yet stored for ``plan``'s devices."""
    return measures_seed_noise(spec.search) and not seeds_stored(study, plan)


def _defaults(space: dict[str, Any] | None) -> dict[str, Any] | None:
    """A hypermodel's default values (``None`` without one)."""
    return hyperparams.defaults(space["space"]) if space else None


def _base_key(spec: StudySpec, plan: DevicePlan, values: dict[str, Any] | None) -> str:
    grid = spec.search.grid
    return training_key(
        spec, plan, grid.base_batch_size, grid.lr_rules[0], values, first_precision(spec)
    )


def base_key(spec: StudySpec, plan: DevicePlan, space: dict[str, Any] | None) -> str:
    """The training key of the base configuration (base batch, first rule, first precision)."""
    return _base_key(spec, plan, _defaults(space))


def first_trains_base(
    spec: StudySpec, plan: DevicePlan, space: dict[str, Any] | None, grid: list[tuple[Any, ...]]
) -> bool:
    """Whether the grid's first point trains exactly the base configuration: its trial is then the
    first seed. Else the seed runs come before the grid and train the first seed themselves."""
    if not grid:
        return False
    first = sorted(grid)[0]
    precision = first[2] if len(first) > 2 else None
    key = training_key(spec, plan, int(first[0]), str(first[1]), _defaults(space), precision)
    return key == base_key(spec, plan, space)


def base_settled(trials: list[FrozenTrial], key: str) -> bool:
    """Whether a grid run of the base configuration (``key``) has ended for good."""
    return any(is_settled(t) for t in _base_runs(trials, key))


def _base_runs(trials: list[FrozenTrial], key: str) -> list[FrozenTrial]:
    """The grid's runs (no repeat) of the configuration whose training key is ``key``."""
    return [
        t
        for t in trials
        if decode(t).configuration.training_key == key and decode(t).reuse.repeat_of is None
    ]


def shown_rule(
    spec: StudySpec, plan: DevicePlan, values: dict[str, Any] | None, base: list[FrozenTrial]
) -> str:
    """The base configuration's rule as the trials table names it. At the base batch the rules
    that leave the rate alone (none, linear, sqrt) train alike, and the table shows the one the
    grid trained: the grid's own run (its first trial), else the first rule in the grid's order
    (sorted, as :func:`first_trains_base`) that trains the base configuration."""
    ran = sorted((t for t in base if "lr_rule" in t.params), key=lambda t: t.number)
    if ran:
        return str(ran[0].params["lr_rule"])
    grid, precision = spec.search.grid, first_precision(spec)
    key = _base_key(spec, plan, values)
    for rule in sorted(grid.lr_rules):
        if training_key(spec, plan, grid.base_batch_size, rule, values, precision) == key:
            return rule
    return grid.lr_rules[0]


def _grid_seed(base: list[FrozenTrial], seed: int) -> tuple[list[int], list[float]]:
    """The grid's base trial as the first seed (its own run), when it completed ``ok``."""
    done = [t for t in base if t.state == TrialState.COMPLETE and status_of(t) == "ok"]
    if not done:
        return [], []
    return [seed], [own_run(min(done, key=lambda t: t.number)).loss]


def seeds_stored(study: optuna.Study, plan: DevicePlan) -> bool:
    """Whether ``plan``'s devices have their seed noise stored (a resumed study runs no seed)."""
    return plan.device_signature in _noise(study)


def _noise(study: optuna.Study) -> dict[str, Any]:
    """The seed noise stored per device signature."""
    return dict(storage_call(study, decode_study, study).seed_noise or {})


def store(study: optuna.Study, attr: str, plan: DevicePlan, record: dict[str, Any]) -> None:
    """Set the study attribute ``attr``'s record for ``plan``'s device signature (a probe's, the
    seed runs'); one storage step: read and written again whole after an outage."""
    storage_call(study, _store_record, study, attr, plan, record)


def _store_record(study: optuna.Study, attr: str, plan: DevicePlan, record: dict[str, Any]) -> None:
    records = dict(decode_study(study).flat.get(attr, {}))
    records[plan.device_signature] = record
    store_study(study, attr, records)


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
    inputs: InputReuse,
    read: tuple[optuna.Study, list[FrozenTrial]],
) -> float | None:
    """One seed run in a fresh child; its final loss, or ``None`` (noted) when it failed. Its
    input pipeline's figure comes from ``read`` (the study's trials as read once) or a seed run
    before it, through ``inputs``."""
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
    request, key, _ = inputs.prepare(request, *read)
    run = runner.run(request, plan.child_environment(), timeout_s)
    outcome = classify(run, memory_capped=plan.memory_limit_bytes is not None)
    inputs.remember(outcome, key)
    if outcome.values is None:
        observer.note(f"seed noise: seed {seed} ended {outcome.status}: {outcome.error}")
        return None
    curve = outcome.attrs.get("val_curve") or outcome.attrs.get("target_curve")
    if curve:
        curves.append(curve)
    return float(outcome.values[0])
