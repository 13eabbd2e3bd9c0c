"""The Optuna driver: a grid of global batch sizes × learning-rate rules, one child per trial.

Effects live here (storage, child processes); decisions are delegated to pure modules —
``tuner.outcome`` decides a trial's status, ``tuner.recommend`` picks the configuration.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import platform
import warnings
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Literal, Protocol

import optuna
from optuna.samplers import GridSampler
from optuna.trial import Trial, TrialState

from tuner.devices import DevicePlan
from tuner.errors import ConfigError, StudyNotFoundError, WorkloadError
from tuner.outcome import TrialOutcome, classify
from tuner.recommend import recommend, smallest_oom_batch
from tuner.runner import run_child
from tuner.scaling import scaled_learning_rate
from tuner.spec import StudySpec
from tuner.storage import mask_password, open_storage

METRIC_NAMES = ("final_loss", "throughput")
DIRECTIONS: list[Literal["minimize", "maximize"]] = ["minimize", "maximize"]
INSPECT_TIMEOUT_S = 600.0


class SearchObserver(Protocol):
    """What the driver reports while it works (the CLI draws it with rich)."""

    def trial_started(self, index: int, total: int, params: dict[str, Any]) -> None: ...

    def epoch_finished(self, event: dict[str, Any]) -> None: ...

    def trial_finished(self, number: int, outcome: TrialOutcome) -> None: ...


class _QuietObserver:
    def trial_started(self, index: int, total: int, params: dict[str, Any]) -> None:
        pass

    def epoch_finished(self, event: dict[str, Any]) -> None:
        pass

    def trial_finished(self, number: int, outcome: TrialOutcome) -> None:
        pass


class _TrialFailed(Exception):
    """Raised from the objective to end a trial FAIL; caught by ``study.optimize``."""


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


def inspect_workload(spec: StudySpec, timeout_s: float = INSPECT_TIMEOUT_S) -> dict[str, Any]:
    """Load the workload once in a CPU-only child: sizes, shapes, versions.

    Raises :class:`WorkloadError` when the model or data cannot be loaded or do not fit together.
    """
    request = {"mode": "inspect", "workload": _workload_dict(spec)}
    env = {"CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "2"}
    run = run_child(request, env, timeout_s)
    outcome_text = run.result_text
    if outcome_text is None:
        raise WorkloadError(
            f"loading the workload failed (exit code {run.returncode}): "
            f"{run.stderr_tail.strip().splitlines()[-1] if run.stderr_tail.strip() else ''}"
        )
    result = json.loads(outcome_text)
    if result.get("status") != "ok":
        raise WorkloadError(str(result.get("error", "loading the workload failed")))
    return result


def check_grid(spec: StudySpec, plan: DevicePlan, n_train: int | None = None) -> None:
    """Every global batch must split evenly over the replicas and fit in the training set."""
    for batch in spec.search.global_batch_sizes:
        if batch % plan.num_replicas:
            raise ConfigError(
                f"global batch {batch} does not divide by {plan.num_replicas} replicas; choose a "
                f"--base-batch-size that is a multiple of {plan.num_replicas}"
            )
        if n_train is not None and batch > n_train:
            raise ConfigError(
                f"global batch {batch} is larger than the training set ({n_train} samples); "
                "use smaller --base-batch-size or --batch-multipliers"
            )


def device_signature(plan: DevicePlan) -> str:
    """Devices and memory cap: OOM knowledge and throughput carry over only within one signature."""
    if plan.memory_limit_bytes is None:
        return plan.signature
    return f"{plan.signature}, cap {plan.memory_limit_bytes // 2**20} MiB per device"


def run_search(
    spec: StudySpec,
    plan: DevicePlan,
    storage_url: str,
    *,
    study_name: str | None = None,
    trial_timeout_s: float = 1800.0,
    observer: SearchObserver | None = None,
) -> SearchReport:
    """Run (or resume) the study; return what was launched. Nothing is stored before the workload
    has been checked, so bad input leaves the storage untouched."""
    observer = observer or _QuietObserver()
    name = study_name or spec.name
    check_grid(spec, plan)
    info = inspect_workload(spec)
    check_grid(spec, plan, n_train=int(info["n_train"]))
    storage = open_storage(storage_url, create=True)
    study = _create_or_resume(storage, storage_url, name, spec, plan, info)
    done = _finished_grid_points(study)
    grid = [(b, r) for b in spec.search.global_batch_sizes for r in spec.search.lr_rules]
    remaining = [point for point in grid if point not in done]
    if remaining:
        objective = _Objective(spec, plan, trial_timeout_s, observer, len(grid), len(done))
        optuna.logging.set_verbosity(optuna.logging.ERROR)
        study.optimize(
            objective, n_trials=len(remaining), catch=(_TrialFailed,), gc_after_trial=False
        )
        launched = objective.launched
    else:
        launched = 0
    return SearchReport(study, launched=launched, already_done=len(done), grid_size=len(grid))


def load_study(storage_url: str, study_name: str) -> optuna.Study:
    """Load an existing study for reading; never creates a database or a study."""
    storage = open_storage(storage_url, create=False)
    names = optuna.get_all_study_names(storage=storage)
    if study_name not in names:
        shown = ", ".join(sorted(names)) or "none"
        raise StudyNotFoundError(
            f"no study named {study_name!r} in {mask_password(storage_url)}; studies there: {shown}"
        )
    return optuna.load_study(study_name=study_name, storage=storage)


def recommendation(study: optuna.Study, tolerance: float | None = None) -> dict[str, Any]:
    """The recommended-config JSON of a stored study."""
    spec = study.user_attrs.get("spec", {}).get("search", {})
    kwargs = {} if tolerance is None else {"tolerance": tolerance}
    return recommend(
        study.get_trials(deepcopy=False),
        study_name=study.study_name,
        base_lr=float(spec.get("base_lr", float("nan"))),
        base_batch_size=int(spec.get("base_batch_size", 0)),
        versions=study.user_attrs.get("versions", {}),
        created_at=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        **kwargs,
    )


def _create_or_resume(
    storage: Any, url: str, name: str, spec: StudySpec, plan: DevicePlan, info: dict[str, Any]
) -> optuna.Study:
    sampler = BatchAscendingGridSampler(
        {
            "global_batch_size": list(spec.search.global_batch_sizes),
            "lr_rule": list(spec.search.lr_rules),
        }
    )
    if name in optuna.get_all_study_names(storage=storage):
        study = optuna.load_study(study_name=name, storage=storage, sampler=sampler)
        stored = study.user_attrs.get("spec")
        if stored is None:
            raise ConfigError(
                f"study {name!r} in {mask_password(url)} was not made by tuner; "
                "choose another --study-name"
            )
        stored_identity = {k: v for k, v in stored.items() if k != "name"}
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
    study.set_user_attr("versions", versions(info.get("versions")))
    signatures = set(study.user_attrs.get("device_signatures", []))
    if device_signature(plan) not in signatures:
        study.set_user_attr("device_signatures", sorted(signatures | {device_signature(plan)}))
    study.set_user_attr(
        "workload",
        {"n_train": info["n_train"], "n_val": info["n_val"], "parameters": info["parameters"]},
    )
    return study


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


def _finished_grid_points(study: optuna.Study) -> set[tuple[int, str]]:
    states = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
    return {
        (int(t.params["global_batch_size"]), str(t.params["lr_rule"]))
        for t in study.get_trials(deepcopy=False, states=states)
        if "global_batch_size" in t.params and "lr_rule" in t.params
    }


def _workload_dict(spec: StudySpec) -> dict[str, str]:
    return {
        "model": spec.workload.model,
        "data": spec.workload.data,
        "loss": spec.workload.loss,
        "optimizer": spec.workload.optimizer,
    }


class _Objective:
    """Runs one grid point per call; the outcome is recorded on the trial in :meth:`_record`."""

    def __init__(
        self,
        spec: StudySpec,
        plan: DevicePlan,
        timeout_s: float,
        observer: SearchObserver,
        grid_size: int,
        already_done: int,
    ) -> None:
        self._spec = spec
        self._plan = plan
        self._timeout_s = timeout_s
        self._observer = observer
        self._grid_size = grid_size
        self._already_done = already_done
        self.launched = 0

    def __call__(self, trial: Trial) -> tuple[float, float]:
        search = self._spec.search
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
            "loop": self._spec.search.loop,
            "update_on": self._spec.search.update_on,
            "devices": self._plan.device_names,
        }
        for key, value in attrs.items():
            trial.set_user_attr(key, value)
        self._observer.trial_started(self._already_done + self.launched + 1, self._grid_size, attrs)
        outcome = self._run(trial, batch, lr, signature)
        self._observer.trial_finished(trial.number, outcome)
        return _record(trial, outcome)

    def _run(self, trial: Trial, batch: int, lr: float, signature: str) -> TrialOutcome:
        oom_at = smallest_oom_batch(trial.study.get_trials(deepcopy=False), signature)
        if oom_at is not None and batch >= oom_at:
            self.launched += 1
            return TrialOutcome(
                "oom-implied",
                error=f"global batch {oom_at} already ran out of memory on {signature}",
            )
        request = {
            "mode": "trial",
            "plan": self._plan.to_dict(),
            "workload": _workload_dict(self._spec),
            "global_batch_size": batch,
            "learning_rate": lr,
            "epochs": self._spec.search.epochs,
            "seed": self._spec.search.seed,
            "loop": self._spec.search.loop_kind,
        }
        self.launched += 1
        try:
            run = run_child(
                request,
                self._plan.child_environment(),
                self._timeout_s,
                on_event=self._observer.epoch_finished,
            )
        except KeyboardInterrupt:
            trial.set_user_attr("status", "interrupted")
            trial.set_user_attr("error", "stopped by the user")
            raise
        return classify(run, memory_capped=self._plan.memory_limit_bytes is not None)


def _record(trial: Trial, outcome: TrialOutcome) -> tuple[float, float]:
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
    raise _TrialFailed(f"{outcome.status}: {outcome.error}")
