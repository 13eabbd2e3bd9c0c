"""A search from start to end: check, open, preflight, trial loop, refresh.

Each step is its own module; this one only puts them in order. Effects live in the driver
(storage, child processes); decisions are delegated to pure modules — ``tuner.core.outcome``
decides a trial's status, ``tuner.core.trials`` which trials are finished for good,
``tuner.core.recommend`` the configuration to use.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.trial import TrialState

from tuner.core.configurations import grid_point
from tuner.core.devices import DevicePlan
from tuner.core.errors import ConfigError
from tuner.core.probe import DEFAULT_PROBE_STEPS
from tuner.core.protocol import DEFAULT_TRIAL_TIMEOUT_S
from tuner.core.spec import StudySpec, check_study_name
from tuner.driver import preflight
from tuner.driver.children import spares
from tuner.driver.observer import QuietObserver, SearchObserver
from tuner.driver.opening import open_study
from tuner.driver.trial_loop import run_trials
from tuner.storage import DEFAULT_HEARTBEAT_S, check_storage
from tuner.views.refresh import refresh


@dataclass(frozen=True)
class SearchReport:
    """What one ``tuner search`` did."""

    study: optuna.Study
    launched: int
    """Trials this run ended: launched, or pruned as oom-implied without a launch."""
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
) -> None:
    """Every check of a search's (or probe's) input that needs no TensorFlow: the study name,
    the heartbeat, the grid against the replicas, and the storage (not in memory, a study
    database or none yet, intact, writable: :func:`tuner.storage.check_storage`).

    Starts no child and writes nothing, so that bad input is one line at once, not after the
    workload check, and leaves the storage as it was. Raises :class:`ConfigError`.
    """
    if study_name is not None:
        check_study_name(study_name, "--study-name")
    if heartbeat_s is not None and not (math.isfinite(heartbeat_s) and heartbeat_s > 0):
        raise ConfigError(f"--heartbeat must be 0 (off) or a positive number, got {heartbeat_s}")
    preflight.check_grid(spec, plan)
    check_storage(storage_url, create=True)


def run_search(
    spec: StudySpec,
    plan: DevicePlan,
    storage_url: str,
    *,
    study_name: str | None = None,
    trial_timeout_s: float = DEFAULT_TRIAL_TIMEOUT_S,
    heartbeat_s: float | None = DEFAULT_HEARTBEAT_S,
    probe: bool = False,
    baseline: bool = True,
    observer: SearchObserver | None = None,
    on_study: Callable[[optuna.Study], None] | None = None,
) -> SearchReport:
    """Run (or resume) the study; return what was launched.

    Nothing is stored before the input (:func:`check_search_input`, before any child) and the
    workload have been checked, so bad input leaves the storage untouched. With ``probe`` the
    grid's sizes are bisected with short runs first and the sizes that do not fit are pruned
    without launching; with ``baseline`` (and several replicas) one single-device trial at the
    base batch is recorded for speedup and scaling efficiency. On resume, trials of dead workers
    (stale heartbeat) and interrupted trials are re-queued; every other finished grid point is
    kept. At the end the dashboard note and plots are rewritten. ``on_study`` receives the
    study as soon as it is open.
    """
    observer = observer or QuietObserver()
    check_search_input(spec, plan, storage_url, study_name=study_name, heartbeat_s=heartbeat_s)
    # The first run after the workload check: a probe, else a new study's baseline (one device).
    first = plan.single_device() if baseline and plan.num_replicas > 1 and not probe else plan
    with spares(expect=first.child_environment()):
        info = preflight.check(spec, plan, probe=probe)
        study = open_study(spec, plan, storage_url, study_name, info, heartbeat_s)
        if on_study is not None:
            on_study(study)
        probed_oom = preflight.prepare(
            study,
            spec,
            plan,
            preflight.batch_limit(spec, info["n_train"]),
            probe=probe,
            baseline=baseline,
            timeout_s=trial_timeout_s,
            observer=observer,
        )
        launched, grid_size = run_trials(
            study,
            spec,
            plan,
            space=info.get("hypermodel"),
            probed_oom=probed_oom,
            timeout_s=trial_timeout_s,
            observer=observer,
        )
    running = _still_running(study)
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
) -> dict[str, Any]:
    """``tuner probe``: find the largest fitting global batch and store it on the study."""
    check_search_input(spec, plan, storage_url, study_name=study_name)
    with spares(expect=plan.child_environment()):
        info = preflight.check(spec, plan)
        study = open_study(spec, plan, storage_url, study_name, info, None)
        found = preflight.run_probe(
            spec,
            plan,
            preflight.batch_limit(spec, info["n_train"]),
            resolution=resolution,
            steps=steps,
            note=note,
        )
    preflight.store(study, "probes", plan, found)
    return found


def _still_running(study: optuna.Study) -> int:
    """Grid points some worker (this one's are done) still runs."""
    trials = study.get_trials(deepcopy=False)
    return len({grid_point(t) for t in trials if t.state == TrialState.RUNNING})
