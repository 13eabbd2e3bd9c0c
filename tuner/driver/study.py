"""The Optuna driver: a grid of global batch sizes × learning-rate rules, one child per trial.

Effects live here (storage, child processes); decisions are delegated to pure modules —
``tuner.core.outcome`` decides a trial's status, ``tuner.core.recommend`` picks the configuration.
"""

from __future__ import annotations

import datetime as _dt
import logging
import platform
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Literal

import optuna
from optuna.samplers import GridSampler
from optuna.trial import FrozenTrial, TrialState

from tuner.core.devices import DevicePlan
from tuner.core.errors import ConfigError, TrialFailed
from tuner.core.hyperparams import defaults
from tuner.core.protocol import DEFAULT_TRIAL_TIMEOUT_S
from tuner.core.recommend import (
    grid_point,
    model_config,
    status_of,
)
from tuner.core.spec import StudySpec, identity_of
from tuner.driver.objective import (
    Objective,
    QuietObserver,
    SearchObserver,
    device_signature,
)
from tuner.driver.preflight import check_grid, inspect_workload, run_baseline, run_probe
from tuner.storage import mask_password, open_storage
from tuner.views.refresh import refresh

METRIC_NAMES = ("final_loss", "throughput")
DIRECTIONS: list[Literal["minimize", "maximize"]] = ["minimize", "maximize"]
DEFAULT_HEARTBEAT_S = 20.0
FINAL_FAILURES = frozenset({"timeout", "crashed", "error"})
"""FAIL statuses that a rerun would repeat: resuming does not run those grid points again."""


class BatchAscendingGridSampler(GridSampler):
    """``GridSampler`` whose grid is ordered by global batch, so a fresh study tries small sizes
    first and the first out-of-memory prunes every larger size without launching it."""

    def __init__(self, search_space: dict[str, list[Any]], seed: int | None = None) -> None:
        super().__init__(search_space, seed=seed)
        self._all_grids.sort()  # params are sorted by name: (global_batch_size, lr_rule)


@dataclass(frozen=True)
class SearchReport:
    """What one ``tuner search`` did."""

    study: optuna.Study
    launched: int
    already_done: int
    grid_size: int
    running: int = 0
    """Grid points still RUNNING at the end: other live workers, or dead ones not yet stale."""


def versions(child_versions: dict[str, str] | None = None) -> dict[str, str]:
    """Versions of tuner, Optuna, Python, and (from the child or package metadata) TF and Keras."""
    from tuner import __version__

    found = {
        "tuner": __version__,
        "optuna": optuna.__version__,
        "python": platform.python_version(),
    }
    for package in ("tensorflow", "keras"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "not installed"
    found.update(child_versions or {})
    return found


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

    Nothing is stored before the workload has been checked, so bad input leaves the storage
    untouched. With ``probe`` the grid's sizes are bisected with short runs first and the sizes
    that do not fit are pruned without launching; with ``baseline`` (and several replicas) one
    single-device trial at the base batch is recorded for speedup and scaling efficiency. On
    resume, trials of dead workers (stale heartbeat) and interrupted trials are re-queued; every
    other finished grid point is kept. At the end the dashboard note and plots are
    rewritten. ``on_study`` receives the study as soon as it is open.
    """
    observer = observer or QuietObserver()
    if probe and spec.search.joint:
        raise ConfigError(
            "--probe finds one boundary for one model; with model_hyperparameters = search each "
            "model configuration has its own (out-of-memory is tracked per configuration)"
        )
    study, info = _open(spec, plan, storage_url, study_name, heartbeat_s)
    if on_study is not None:
        on_study(study)
    signature = device_signature(plan)
    if probe:
        observer.note("probing the largest global batch that fits…")
        found = run_probe(
            spec,
            plan,
            int(info["n_train"]),
            grid=spec.search.global_batch_sizes,
            note=observer.note,
        )
        _store_keyed(study, "probes", signature, found)
    if (
        baseline
        and plan.num_replicas > 1
        and signature not in study.user_attrs.get("baselines", {})
    ):
        observer.note(f"single-device baseline at global batch {spec.search.base_batch_size}…")
        reference = run_baseline(spec, plan, timeout_s=trial_timeout_s)
        if reference["status"] == "ok":
            _store_keyed(study, "baselines", signature, reference)
        else:  # not stored: the next run tries again
            observer.note(f"the baseline failed ({reference['status']}): {reference['error']}")
    probed_oom = study.user_attrs.get("probes", {}).get(signature, {}).get("smallest_oom_batch")
    _requeue_unfinished(study)
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    space = info.get("hypermodel")
    if spec.search.joint:
        done_count = _budget_used(study)
        grid_size = spec.search.trials
        objective = Objective(
            spec, plan, trial_timeout_s, observer, grid_size, done_count, space=space
        )
        # Trials until the budget is used, counting every worker's (finished or running) ones;
        # re-queued trials (interrupted, or a dead worker's) run even when it is.
        while True:
            _requeue_unfinished(study)
            waiting = any(t.state == TrialState.WAITING for t in study.get_trials(deepcopy=False))
            if not waiting and _budget_used(study) >= spec.search.trials:
                break
            study.optimize(objective, n_trials=1, catch=(TrialFailed,), gc_after_trial=False)
    else:
        done = settled_grid_points(study.get_trials(deepcopy=False))
        done_count = len(done)
        grid = [(b, r) for b in spec.search.global_batch_sizes for r in spec.search.lr_rules]
        grid_size = len(grid)
        objective = Objective(
            spec, plan, trial_timeout_s, observer, grid_size, done_count, probed_oom, space
        )
        # One trial at a time, and only while a grid point is unclaimed: a point that another
        # worker is running is left to it, so concurrent workers do not duplicate the grid's end.
        for _ in range(grid_size - done_count):
            _requeue_unfinished(study)  # points another worker left unfinished come back queued
            if not _unclaimed(study, grid):
                break
            study.optimize(objective, n_trials=1, catch=(TrialFailed,), gc_after_trial=False)
    running = {
        grid_point(t) for t in study.get_trials(deepcopy=False) if t.state == TrialState.RUNNING
    }
    if not running:  # the last worker to finish writes the views, once
        refresh(study, warn=observer.note)
    return SearchReport(
        study,
        launched=objective.launched,
        already_done=done_count,
        grid_size=grid_size,
        running=len(running),
    )


def probe_study(
    spec: StudySpec,
    plan: DevicePlan,
    storage_url: str,
    *,
    study_name: str | None = None,
    resolution: int | None = None,
    steps: int = 5,
    note: Callable[[str], None] = lambda message: None,
) -> dict[str, Any]:
    """``tuner probe``: find the largest fitting global batch and store it on the study."""
    study, info = _open(spec, plan, storage_url, study_name, None)
    found = run_probe(
        spec, plan, int(info["n_train"]), resolution=resolution, steps=steps, note=note
    )
    _store_keyed(study, "probes", device_signature(plan), found)
    return found


def _open(
    spec: StudySpec,
    plan: DevicePlan,
    storage_url: str,
    study_name: str | None,
    heartbeat_s: float | None,
) -> tuple[optuna.Study, dict[str, Any]]:
    """Check the grid and the workload, then create or resume the study (in that order, so that
    bad input never reaches the storage)."""
    check_grid(spec, plan)
    info = inspect_workload(spec)
    check_grid(spec, plan, n_train=int(info["n_train"]))
    if spec.search.joint and not info.get("hypermodel"):
        raise ConfigError(
            f"model_hyperparameters = search needs a KerasTuner hypermodel; {spec.workload.model} "
            "is a plain model builder (use model_hyperparameters = defaults)"
        )
    storage = open_storage(storage_url, create=True, heartbeat_s=heartbeat_s)
    name = study_name or spec.name
    return _create_or_resume(storage, storage_url, name, spec, plan, info), info


def _store_keyed(study: optuna.Study, attr: str, key: str, value: dict[str, Any]) -> None:
    """Set ``study.user_attrs[attr][key] = value`` (one record per device signature)."""
    records = dict(study.user_attrs.get(attr, {}))
    records[key] = value
    study.set_user_attr(attr, records)


def _create_or_resume(
    storage: Any, url: str, name: str, spec: StudySpec, plan: DevicePlan, info: dict[str, Any]
) -> optuna.Study:
    sampler = _sampler(spec, info.get("hypermodel"))
    if name in optuna.get_all_study_names(storage=storage):
        study = optuna.load_study(study_name=name, storage=storage, sampler=sampler)
        stored = study.user_attrs.get("spec")
        if stored is None and study.get_trials(deepcopy=False):
            raise ConfigError(
                f"study {name!r} in {mask_password(url)} was not made by tuner; "
                "choose another --study-name"
            )
        if stored is None:  # another worker is creating it right now: finish the job
            stored = spec.to_dict()
            study.set_user_attr("spec", stored)
        stored_identity = identity_of(stored)
        if stored_identity != spec.identity():
            raise ConfigError(
                f"study {name!r} in {mask_password(url)} was created with a different spec "
                f"({_first_difference(stored_identity, spec.identity())}); resume it with the same "
                "spec or pick a new --study-name"
            )
    else:
        logging.getLogger("optuna").setLevel(logging.ERROR)
        study = optuna.create_study(
            storage=storage,
            study_name=name,
            directions=list(DIRECTIONS),
            sampler=sampler,
            load_if_exists=True,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.set_metric_names(list(METRIC_NAMES))
        study.set_user_attr("spec", spec.to_dict())
        study.set_user_attr("created_at", _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"))
    signatures = set(study.user_attrs.get("device_signatures", []))
    signature = device_signature(plan)
    if signatures and signature not in signatures and study.get_trials(deepcopy=False):
        raise ConfigError(
            f"study {name!r} in {mask_password(url)} ran on {', '.join(sorted(signatures))}; "
            f"this run is on {signature}, whose out-of-memory sizes and throughput differ: "
            f"give these devices their own --study-name (e.g. {name}-{_slug(signature)})"
        )
    study.set_user_attr("versions", versions(info.get("versions")))
    if signature not in signatures:
        study.set_user_attr("device_signatures", sorted(signatures | {signature}))
    if info.get("hypermodel"):
        study.set_user_attr("hypermodel", info["hypermodel"])
    study.set_user_attr(
        "workload",
        {"n_train": info["n_train"], "n_val": info["n_val"], "parameters": info["parameters"]},
    )
    return study


def _slug(text: str) -> str:
    """``2x NVIDIA A100-SXM4-80GB`` -> ``2x-nvidia-a100-sxm4-80gb``."""
    return "-".join(re.findall(r"[a-z0-9]+", text.lower()))


def _sampler(spec: StudySpec, hypermodel: dict[str, Any] | None) -> optuna.samplers.BaseSampler:
    """The grid (batch ascending, a hypermodel's defaults as one-value axes), or for a joint
    search multivariate TPE: it handles mixed and conditional spaces (``group=True``) and two
    objectives, and needs far fewer trials than NSGA-II; ``constant_liar`` keeps concurrent
    workers from sampling the same point."""
    search = spec.search
    if search.joint:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return optuna.samplers.TPESampler(
                multivariate=True,
                group=True,
                constant_liar=True,
                seed=search.seed,
                n_startup_trials=max(2, min(10, search.trials // 3)),
            )
    space: dict[str, list[Any]] = {
        "global_batch_size": list(search.global_batch_sizes),
        "lr_rule": list(search.lr_rules),
    }
    if hypermodel:
        space.update({name: [value] for name, value in defaults(hypermodel["space"]).items()})
    return BatchAscendingGridSampler(space)


def _first_difference(old: dict[str, Any], new: dict[str, Any], prefix: str = "") -> str:
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            found = _first_difference(a, b, f"{prefix}{key}.")
            if found:
                return found
        elif a != b:
            return f"{prefix}{key}: stored {a!r}, now {b!r}"
    return ""


def settled_grid_points(trials: list[FrozenTrial]) -> set[tuple[int, str]]:
    """Grid points that need no more runs: COMPLETE, PRUNED, or FAIL for a reason that a rerun
    would repeat (timeout, crash, error). Interrupted and dead-worker trials are not settled."""
    settled = set()
    for trial in trials:
        if "global_batch_size" not in trial.params or "lr_rule" not in trial.params:
            continue
        if trial.state in (TrialState.COMPLETE, TrialState.PRUNED) or (
            trial.state == TrialState.FAIL and status_of(trial) in FINAL_FAILURES
        ):
            settled.add((int(trial.params["global_batch_size"]), str(trial.params["lr_rule"])))
    return settled


def _requeue(study: optuna.Study, trial: FrozenTrial) -> None:
    """Queue ``trial``'s grid point again: a WAITING copy that remembers which trial failed."""
    system_attrs = {**trial.system_attrs, "failed_trial": trial.number}
    system_attrs["retry_history"] = [*trial.system_attrs.get("retry_history", []), trial.number]
    study.add_trial(
        optuna.trial.create_trial(
            state=TrialState.WAITING,
            params=trial.params,
            distributions=trial.distributions,
            user_attrs={k: v for k, v in trial.user_attrs.items() if k not in ("status", "error")},
            system_attrs=system_attrs,
        )
    )


def _budget_used(study: optuna.Study) -> int:
    """Trials that count against a joint search's budget: those finished or running, but for
    the interrupted and the dead workers' ones (run again); queued ones count once they run."""
    return sum(
        1
        for t in study.get_trials(deepcopy=False)
        if t.state in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING)
        or (t.state == TrialState.FAIL and status_of(t) in FINAL_FAILURES)
    )


def _unclaimed(study: optuna.Study, grid: list[tuple[int, str]]) -> bool:
    """Whether a queued trial waits, or a grid point is neither settled nor running."""
    trials = study.get_trials(deepcopy=False)
    if any(t.state == TrialState.WAITING for t in trials):
        return True
    claimed = settled_grid_points(trials) | {
        grid_point(t) for t in trials if t.state == TrialState.RUNNING
    }
    return any(point not in claimed for point in grid)


def _requeue_unfinished(study: optuna.Study) -> None:
    """Fail trials whose worker died (stale heartbeat; Optuna's retry callback re-queues them),
    and re-queue interrupted trials whose grid point (and model configuration) has no other run,
    once."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)  # a no-op without heartbeat
    trials = study.get_trials(deepcopy=False)

    def key(trial: FrozenTrial) -> tuple[Any, ...]:
        return (*grid_point(trial), model_config(trial))

    settled_keys = {
        key(t)
        for t in trials
        if t.state in (TrialState.COMPLETE, TrialState.PRUNED)
        or (t.state == TrialState.FAIL and status_of(t) in FINAL_FAILURES)
    }
    retried = {t.system_attrs.get("failed_trial") for t in trials}
    pending = {key(t) for t in trials if t.state in (TrialState.WAITING, TrialState.RUNNING)}
    for trial in trials:
        if (
            trial.state == TrialState.FAIL
            and None not in grid_point(trial)
            and key(trial) not in settled_keys
            and key(trial) not in pending
            and trial.number not in retried
        ):
            _requeue(study, trial)
            pending.add(key(trial))
