"""A search from start to end: check, open, probe and baseline, trial loop, refresh. Each step
is its own module; this one puts them in order and chooses the one
:class:`~tuner.driver.children.ChildRunner` every step is handed."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.trial import TrialState

from tuner.core.budget import Ledger
from tuner.core.configurations import grid_point
from tuner.core.devices import DevicePlan
from tuner.core.errors import ConfigError
from tuner.core.options import named
from tuner.core.plan import busy_line, plan_of
from tuner.core.probe import DEFAULT_PROBE_STEPS
from tuner.core.protocol import DEFAULT_TRIAL_TIMEOUT_S
from tuner.core.spec import StudySpec, check_study_name
from tuner.core.trials import claimed_count, settled_grid_points
from tuner.driver.children import ChildRunner, child_runner, spares
from tuner.driver.decide.budget import baseline_runs, budget_baseline, ledger_of, timed
from tuner.driver.decide.seeds import seeds_stored, store
from tuner.driver.observer import QuietObserver, SearchObserver, observed
from tuner.driver.setup import devices, probing, workload_check
from tuner.driver.setup.baseline import prepare_baseline
from tuner.driver.setup.opening import open_study
from tuner.driver.trial.grid import grid_points
from tuner.driver.trial.loop import run_trials
from tuner.driver.trial.spooled import record_spooled, storage_faults
from tuner.storage import DEFAULT_HEARTBEAT_S, DEFAULT_STORAGE_WAIT_S, check_storage
from tuner.storage.guarded import storage_call
from tuner.views.refresh import refresh


@dataclass(frozen=True)
class SearchReport:
    """What one ``tuner search`` did."""

    study: optuna.Study
    launched: int
    """Trials this run ended: launched, or pruned without a launch (oom-implied, bracketed)."""
    grid_size: int
    """Grid points (or, in a joint search, the trial budget)."""
    running: int = 0
    """Grid points still RUNNING at the end: other live workers, or dead ones not yet stale."""


def check_search_input(
    spec: StudySpec,
    plan: DevicePlan,
    storage_url: str,
    *,
    study_name: str | None = None,
    heartbeat_s: float | None = None,
    storage_wait_s: float = DEFAULT_STORAGE_WAIT_S,
) -> None:
    """Every check of a search's (or probe's) input that needs no TensorFlow: the study name,
    the heartbeat, the grid against the replicas, the storage
    (:func:`~tuner.storage.check_storage`). Starts no child and writes nothing: bad input is one
    line at once, the storage as it was. Raises :class:`ConfigError`."""
    if study_name is not None:
        check_study_name(study_name, named("study_name"))
    if heartbeat_s is not None and not (math.isfinite(heartbeat_s) and heartbeat_s > 0):
        raise ConfigError(
            f"{named('heartbeat')} must be 0 (off) or a positive number, got {heartbeat_s}"
        )
    workload_check.check_grid(spec, plan)
    check_storage(storage_url, create=True, wait_s=storage_wait_s)


def run_search(
    spec: StudySpec,
    plan: DevicePlan,
    storage_url: str,
    *,
    study_name: str | None = None,
    trial_timeout_s: float = DEFAULT_TRIAL_TIMEOUT_S,
    heartbeat_s: float | None = DEFAULT_HEARTBEAT_S,
    storage_wait_s: float = DEFAULT_STORAGE_WAIT_S,
    probe: bool = False,
    baseline: bool = True,
    observer: SearchObserver | None = None,
    on_study: Callable[[optuna.Study], None] | None = None,
    runner: ChildRunner | None = None,
    on_checked: Callable[[ChildRunner], None] = lambda runner: None,
) -> SearchReport:
    """Run (or resume) the study; return what was launched. Nothing is stored before the input
    (:func:`check_search_input`, then ``on_checked(runner)``, before any child) and the workload
    are checked. ``probe``: bisect the grid's sizes first, pruning those that do not fit;
    ``baseline`` (several replicas): a single-device trial at the base batch. ``on_study`` gets
    the study once open; ``runner`` runs every child (:func:`child_runner`'s)."""
    observer = observer or QuietObserver()
    ledger = ledger_of(spec)  # the budget counts from here: the check and baseline are in it
    runner = timed(runner if runner is not None else child_runner(), ledger)
    check_search_input(
        spec,
        plan,
        storage_url,
        study_name=study_name,
        heartbeat_s=heartbeat_s,
        storage_wait_s=storage_wait_s,
    )
    on_checked(runner)  # what the caller does before any child (tuner search: --validate)
    # The first run after the workload check: a probe, else a new study's baseline (one device).
    first = plan.baseline_plan() if baseline and plan.num_replicas > 1 and not probe else plan
    load = _announce(spec, plan, observer, baseline=baseline and not probe)
    with spares(expect=first.child_environment()):
        measured = spec.search.run.noise_scale and plan.num_replicas > 1
        checking = observed(runner, observer, "workload check")
        info = workload_check.check(
            spec,
            plan,
            runner=checking,
            probe=probe,
            noise_scale=measured,
            timeout_s=trial_timeout_s,
        )
        study = open_study(spec, plan, storage_url, study_name, info, heartbeat_s, storage_wait_s)
        devices.store_load(study, load)
        if on_study is not None:
            on_study(study)
        with storage_faults(study, observer):
            return _search(
                study, spec, plan, info, probe, baseline, runner, trial_timeout_s, observer, ledger
            )


def _announce(
    spec: StudySpec, plan: DevicePlan, observer: SearchObserver, *, baseline: bool
) -> dict[str, Any]:
    """Before the first child: the plan (a new study's counts: a resumed one runs fewer) and, on
    a busy machine, that its throughput figures will not be reliable. Returns the machine's load
    (stored on the study once it is open)."""
    load = devices.measure()
    busy = busy_line(load)
    if busy is not None:
        observer.note(busy)
    runs = baseline_runs(spec) * len(spec.search.grid.precisions) if plan.num_replicas > 1 else 0
    size = spec.search.grid.trials if spec.search.grid.joint else len(grid_points(spec))
    observer.planned(plan_of(spec, size, runs if baseline else 0))
    return load


def _search(
    study: optuna.Study,
    spec: StudySpec,
    plan: DevicePlan,
    info: dict[str, Any],
    probe: bool,
    baseline: bool,
    runner: ChildRunner,
    timeout_s: float,
    observer: SearchObserver,
    ledger: Ledger | None = None,
) -> SearchReport:
    """:func:`run_search` once the study is open: spooled results first, then the probe and the
    single-device baseline (stored on ``study``), then the trials."""
    record_spooled(study, observer.note)  # before anything runs: no point measured twice
    if probe:
        n_train = workload_check.batch_limit(spec, info["n_train"])
        probing.probe_grid(study, spec, plan, n_train, runner=runner, note=observer.note)
    if baseline and plan.num_replicas > 1:
        # Under a budget the baseline runs once: its further runs only narrow the speedup's
        # interval, worth less than any grid point (counted as left out).
        once = spec if ledger is None else budget_baseline(spec, plan, ledger)
        for precision in spec.search.grid.precisions:
            prepare_baseline(
                study, once, plan, precision, runner=runner, timeout_s=timeout_s, observer=observer
            )
    if seeds_stored(study, plan):  # said before the grid's: a resumed plan counts no seed run
        observer.phase("seeds", 0)
    observer.phase("grid", _grid_left(study, spec))  # a resumed study: fewer than planned
    launched, grid_size = run_trials(
        study,
        spec,
        plan,
        space=info.get("hypermodel"),
        probed_oom=probing.probed_oom(study, plan),  # now or before, on these devices
        runner=runner,
        timeout_s=timeout_s,
        observer=observer,
        ledger=ledger,
    )
    # Grid points some other worker still runs (this one's are done).
    trials = storage_call(study, study.get_trials, deepcopy=False)
    running = len({grid_point(t) for t in trials if t.state == TrialState.RUNNING})
    if not running:  # the last worker to finish writes the views, once
        refresh(study, warn=observer.note)
    return SearchReport(study, launched=launched, grid_size=grid_size, running=running)


def probe_study(
    spec: StudySpec,
    plan: DevicePlan,
    storage_url: str,
    *,
    study_name: str | None = None,
    resolution: int | None = None,
    steps: int = DEFAULT_PROBE_STEPS,
    note: Callable[[str], None] = lambda message: None,
    runner: ChildRunner | None = None,
) -> dict[str, Any]:
    """``tuner probe``: find the largest fitting global batch and store it on the study."""
    runner = runner if runner is not None else child_runner()
    check_search_input(spec, plan, storage_url, study_name=study_name)
    with spares(expect=plan.child_environment()):
        info = workload_check.check(spec, plan, runner=runner)
        study = open_study(spec, plan, storage_url, study_name, info, None)
        found = probing.run_probe(
            spec,
            plan,
            workload_check.batch_limit(spec, info["n_train"]),
            runner=runner,
            resolution=resolution,
            steps=steps,
            note=note,
        )
    store(study, probing.PROBES, plan, found)
    return found


def _grid_left(study: optuna.Study, spec: StudySpec) -> int:
    """Grid points (a joint search: trials of its budget) no run has settled yet."""
    trials = storage_call(study, study.get_trials, deepcopy=False)
    if spec.search.grid.joint:
        return max(0, spec.search.grid.trials - claimed_count(trials))
    return len(grid_points(spec)) - len(settled_grid_points(trials))
