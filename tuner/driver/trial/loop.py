"""The trial loop: one trial at a time until the grid (or a joint search's budget) is done, in the
order docs/design/architecture.md draws ("One trial, in order"); under a ``--budget`` the seeds
run only when the rest of the grid still fits after them. Several workers may share a study, so
the loop asks the storage before every trial: points that another worker left unfinished come
back queued, and a point another worker runs is left to it.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from tuner.core.budget import Ledger, RunKey
from tuner.core.devices import DevicePlan
from tuner.core.errors import RepeatedFailureError, TrialFailed
from tuner.core.spec import StudySpec
from tuner.core.trials import GridProgress, claimed_count, has_budget_left, settled_grid_points
from tuner.driver.children import ChildRunner, last_run
from tuner.driver.decide.budget import close, grid_left, training_key_of
from tuner.driver.decide.racing import race
from tuner.driver.decide.seeds import (
    base_key,
    base_settled,
    first_trains_base,
    measure_seed_noise,
    wants_seeds,
)
from tuner.driver.observer import SearchObserver, quiet_optuna
from tuner.driver.trial.extend import SweepExtension, extends, most_extra
from tuner.driver.trial.grid import BatchAscendingGridSampler, grid_points
from tuner.driver.trial.objective import Objective
from tuner.driver.trial.resume import fail_stale, requeue_unfinished, unborn_wait_s
from tuner.storage import spool
from tuner.storage.faults import StorageFaultError
from tuner.storage.guarded import beating, guard_of, storage_call


@dataclass(frozen=True)
class _Loop:
    """What every step of the loop needs: the study, its spec and devices, the children's
    runner, the trial timeout, the observer, and the ``--budget`` (``None``: none)."""

    study: optuna.Study
    spec: StudySpec
    plan: DevicePlan
    space: dict[str, Any] | None
    runner: ChildRunner
    timeout_s: float
    observer: SearchObserver
    ledger: Ledger | None


def run_trials(
    study: optuna.Study,
    spec: StudySpec,
    plan: DevicePlan,
    *,
    space: dict[str, Any] | None,
    probed_oom: int | None,
    runner: ChildRunner,
    timeout_s: float,
    observer: SearchObserver,
    ledger: Ledger | None = None,
) -> tuple[int, int]:
    """Run the study's remaining trials; return ``(launched, total)``: how many trials this call
    ended (run or pruned without a launch) and the size of the grid or the joint budget.
    ``probed_oom``: the smallest global batch known not to fit; ``ledger``: the ``--budget``."""
    requeue_unfinished(study)
    quiet_optuna()
    loop = _Loop(study, spec, plan, space, runner, timeout_s, observer, ledger)
    launched, total = _run_joint(loop) if spec.search.grid.joint else _run_grid(loop, probed_oom)
    close(study, spec, plan, ledger, observer)
    return launched, total


def _run_joint(loop: _Loop) -> tuple[int, int]:
    """A joint search: TPE picks each trial until the budget of trials is claimed."""
    study, spec, plan = loop.study, loop.spec, loop.plan
    ledger, observer, budget = loop.ledger, loop.observer, spec.search.grid.trials
    done = claimed_count(storage_call(study, study.get_trials, deepcopy=False))
    objective = Objective(
        spec, plan, loop.timeout_s, observer, budget, done, space=loop.space, runner=loop.runner
    )
    # Re-queued trials (interrupted, or a dead worker's) run even when the budget is used.
    while True:
        trials = requeue_unfinished(study)  # a dead worker's trial counts until failed
        if not has_budget_left(trials, budget):
            break
        claimed = claimed_count(trials)
        any_trial = (0, plan.num_replicas)  # TPE picks the batch: any trial's mean
        if ledger is not None and claimed and not ledger.fits([any_trial])[0]:
            ledger.leave_out("grid", [any_trial] * max(0, budget - claimed))
            break
        _run_one(study, objective, observer, trials)
        _stop_if_repeated(objective)
    return objective.launched, budget


def _run_grid(loop: _Loop, probed_oom: int | None) -> tuple[int, int]:
    """The grid: its base point, the base's seed runs, the rest by ascending batch, then the
    race's repeats."""
    study, spec, plan, space, ledger = loop.study, loop.spec, loop.plan, loop.space, loop.ledger
    observer = loop.observer
    grid = grid_points(spec)
    done = len(settled_grid_points(storage_call(study, study.get_trials, deepcopy=False)))
    objective = Objective(
        spec, plan, loop.timeout_s, observer, len(grid), done, probed_oom, space, runner=loop.runner
    )
    progress = GridProgress(grid)  # has_unclaimed_work, without rescanning finished trials
    wanted, seeded = wants_seeds(study, spec, plan), False
    key = base_key(spec, plan, space)
    key_of = training_key_of(spec, plan, space)
    early = wanted and not first_trains_base(spec, plan, space, grid)
    past_edge = SweepExtension(
        study, spec, plan.device_signature, plan.num_replicas, observer, objective.extend, ledger
    )
    for _ in range(len(grid) - done + 1 + most_extra(spec)):
        trials = requeue_unfinished(study)  # dead workers' trials failed, queued again
        if not seeded and (not wanted or early or base_settled(trials, key)):
            seeded = True
            _seed_noise(loop, grid_left(trials, grid, plan, key_of))
            if wanted:  # the rest of the grid, after the seeds
                observer.phase("grid", len(grid_left(trials, grid, plan)))
        left = grid_left(trials, grid, plan, key_of) if ledger is not None else ()
        # A batch whose best rate sits at the sweep's edge: one rate more past it, queued (run
        # next: a queued trial comes first) once the batch's rates have finished.
        if extends(spec) and past_edge.queue(trials, left):
            trials = storage_call(study, study.get_trials, deepcopy=False)
        unclaimed = progress.unclaimed(trials)
        if not unclaimed and not _unborn_freed(study, progress, observer):
            break
        if ledger is not None and not _grid_fits(ledger, left, bool(settled_grid_points(trials))):
            break
        # The last grid point, with the seeds done and no race after it: no spare for a next run.
        last_run(seeded and spec.search.decision.max_repeats < 2 and unclaimed <= 1)
        _run_one(study, objective, observer, trials)
        _stop_if_repeated(objective)
    if not seeded:  # the base point did not settle (another worker runs it): no seed runs
        trials = storage_call(study, study.get_trials, deepcopy=False)
        _seed_noise(loop, grid_left(trials, grid, plan, key_of))
    race(
        study,
        spec,
        plan,
        grid,
        run_one=lambda: _race_one(study, objective, observer),
        extend=objective.extend,
        observer=observer,
        ledger=ledger,
    )
    return objective.launched, len(grid)


def _unborn_freed(study: optuna.Study, progress: GridProgress, observer: SearchObserver) -> bool:
    """Whether, with every grid point claimed, failing the trials of dead workers freed one: a
    trial seen without any heartbeat is failed only after this process has seen it so for the
    grace period (:func:`tuner.driver.trial.resume.unborn_wait_s`): the loop waits that out
    once, then looks again (a dead worker's RUNNING trial looks claimed until failed)."""
    wait = unborn_wait_s(study)
    if wait <= 0:
        return False
    observer.note(
        f"a RUNNING trial has no heartbeat yet: waiting {wait:.0f} s (the heartbeat grace) to "
        "see whether its worker is alive"
    )
    time.sleep(wait + 0.1)
    return progress.has_unclaimed_work(requeue_unfinished(study))


def _race_one(study: optuna.Study, objective: Objective, observer: SearchObserver) -> None:
    """One of the race's trials (its repeats are queued first), after the stale check that
    ``study.optimize`` made as a trial started."""
    fail_stale(study)
    _run_one(study, objective, observer)


def _seed_noise(loop: _Loop, reserve: tuple[RunKey, ...]) -> None:
    """The seed runs of the base configuration: their noise sets the loss tolerance, so they run
    before the rest of the grid (``reserve``: the grid's runs a budget must keep room for)."""
    measure_seed_noise(
        loop.study,
        loop.spec,
        loop.plan,
        space=loop.space,
        runner=loop.runner,
        timeout_s=loop.timeout_s,
        observer=loop.observer,
        ledger=loop.ledger,
        reserve=reserve,
    )


def _grid_fits(ledger: Ledger, left: tuple[RunKey, ...], answered: bool) -> bool:
    """Whether the grid's next training (the smallest batch left; ``left``: its distinct
    trainings) fits the budget; if not, every one left is counted as left out (they run in
    ascending batch and the others would not start either). Until a grid point has settled
    (``answered``), the next starts whatever the budget: an answer needs one."""
    if not left or not answered or ledger.fits(left[:1])[0]:
        return True
    ledger.leave_out("grid", left)
    return False


def _stop_if_repeated(objective: Objective) -> None:
    """A failure that does not depend on the configuration ends the search with one line
    (:meth:`Objective._watch`); what is stored stays."""
    if objective.stopped is not None:
        raise RepeatedFailureError(objective.stopped)


def _run_one(
    study: optuna.Study,
    objective: Objective,
    observer: SearchObserver,
    trials: list[FrozenTrial] | None = None,
) -> None:
    """One trial, asked for and told by tuner (its heartbeat beating): a queued one first, else the
    sampler's next point; a FAIL does not stop us. ``trials``: the study's trials as just read,
    which the sampler and the trial decide with (else they read)."""
    _claim_allowed(study)
    sampler = study.sampler if isinstance(study.sampler, BatchAscendingGridSampler) else None
    if sampler is not None and trials is not None:
        sampler.expect(list(trials))
    try:
        trial = storage_call(study, _ask, study)
        with beating(study, trial._trial_id):
            told = _outcome(study, trial, objective, trials)
        if told is not None and not _tell(study, trial, *told):
            # This worker was stopped (SIGSTOP, a suspended VM) past the heartbeat grace: another
            # worker failed its trial and queued the grid point again, which measures it afresh.
            observer.note(
                "this worker's trial was handed to another worker while this one was stalled "
                "(stale heartbeat); its result is dropped and the retry measures the point again"
            )
    finally:
        if sampler is not None:
            sampler.expect(None)  # read before this trial: never for a later one


def _ask(study: optuna.Study) -> optuna.Trial:
    """``study.ask()``, without Optuna's warning that a heartbeat wants ``study.optimize``:
    tuner writes the heartbeat itself (:func:`tuner.storage.guarded.beating`)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Heartbeat of storage", UserWarning)
        return study.ask()


def _outcome(
    study: optuna.Study, trial: optuna.Trial, objective: Objective, trials: list[FrozenTrial] | None
) -> tuple[TrialState, tuple[float, float] | None] | None:
    """Run the objective: the state and values to tell (``None``: nothing to tell). One catch
    for the trial's end: an interrupt or an unknown error is told FAIL, then raised."""
    try:
        return TrialState.COMPLETE, objective(trial, trials)
    except optuna.TrialPruned:
        return TrialState.PRUNED, None
    except TrialFailed:
        return TrialState.FAIL, None
    except optuna.exceptions.UpdateFinishedTrialError:
        return None  # its outcome was refused: another worker ended it (told by the caller)
    except StorageFaultError:
        raise  # nothing can be told: the result is in the spool
    except BaseException:
        storage_call(study, study.tell, trial, state=TrialState.FAIL)
        raise


def _tell(
    study: optuna.Study, trial: optuna.Trial, state: TrialState, values: tuple[float, float] | None
) -> bool:
    """Store the trial's end; ``False`` when another worker had already ended it (failed as
    stale while this worker was stalled). The spooled copy goes once the storage has it."""
    try:
        storage_call(study, study.tell, trial, values, state=state)
    except optuna.exceptions.UpdateFinishedTrialError:
        return False  # ended by another worker between Optuna's read and its write
    except ValueError:
        if not _finished(study, trial):
            raise  # Optuna refused the values themselves: a bug of tuner's, not a take-over
        return False
    guard = guard_of(study)
    if guard is not None and state.is_finished():
        spool.discard(guard.spool_folder, trial._trial_id, state.name, values)
    return True


def _finished(study: optuna.Study, trial: optuna.Trial) -> bool:
    """Whether ``trial`` is finished in the storage (Optuna refuses to tell a finished trial
    with a ``ValueError`` of no class of its own: the storage says which one it was)."""
    finished = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
    ended = storage_call(study, study.get_trials, deepcopy=False, states=finished)
    return any(t.number == trial.number for t in ended)


def _claim_allowed(study: optuna.Study) -> None:
    """A worker whose heartbeat has not been written for longer than the grace period claims
    no new trial: another worker may be taking its last one over."""
    guard = guard_of(study)
    if guard is not None and guard.heartbeat_lost:
        raise StorageFaultError(
            f"storage {guard.place.shown}: this worker's heartbeat could not be written for "
            "longer than the grace period, so it claims no new trial (another worker may run "
            "its last one); run the same `tuner search` again once the storage is back"
        )
