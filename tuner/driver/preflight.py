"""What runs before the grid: the input check, then the probe and the single-device baseline.

:func:`check` runs before anything is stored, so bad input leaves the storage untouched;
:func:`prepare` runs on the open study and stores its findings there (study user attrs
``probes``, one record per device signature, and ``baselines``, one per device signature and
precision of the grid). Each run is a child like a trial; the probe's children are
:mod:`tuner.driver.probing`'s.
"""

from __future__ import annotations

import json
import statistics
from datetime import UTC, datetime
from typing import Any

import optuna

from tuner.core.configurations import window_rates
from tuner.core.devices import DevicePlan, inspect_environment
from tuner.core.errors import ConfigError, TunerError, WorkloadError
from tuner.core.oom import last_message
from tuner.core.outcome import ChildRun, classify
from tuner.core.protocol import DEFAULT_TRIAL_TIMEOUT_S
from tuner.core.recommend import baseline_at, baseline_key
from tuner.core.spec import StudySpec
from tuner.core.stats import throughput_interval
from tuner.core.target import budget_samples, check_cadence, default_cadence
from tuner.core.windows import MIN_TIMED_WINDOWS, min_samples
from tuner.driver.baseline_reuse import find_baseline, reuse_key
from tuner.driver.children import first_precision, inspect_request, run_child, trial_request
from tuner.driver.observer import SearchObserver
from tuner.driver.probing import run_probe

INSPECT_TIMEOUT_S = 600.0
_INSPECTED = ("n_train", "n_val", "parameters")
"""What the rest of the search needs from the workload check's result."""


def check(spec: StudySpec, plan: DevicePlan, *, probe: bool = False) -> dict[str, Any]:
    """Check the grid, the options and the workload (in a child); return what the workload
    check found (sizes, versions, a hypermodel's space). Raises :class:`ConfigError` for bad input.

    ``probe``: whether the grid will be probed first (refused for a joint search).
    """
    if probe and spec.search.joint:
        raise ConfigError(
            "--probe finds one boundary for one model; with model_hyperparameters = search each "
            "model configuration has its own (out-of-memory is tracked per configuration)"
        )
    check_grid(spec, plan)
    info = inspect_workload(spec)
    check_grid(spec, plan, n_train=info["n_train"])
    if spec.search.joint and not info.get("hypermodel"):
        raise ConfigError(
            f"model_hyperparameters = search needs a KerasTuner hypermodel; {spec.workload.model} "
            "is a plain model builder (use model_hyperparameters = defaults)"
        )
    return info


def inspect_workload(spec: StudySpec, timeout_s: float = INSPECT_TIMEOUT_S) -> dict[str, Any]:
    """Load the workload once in a CPU-only child, on the spec's Keras backend: sizes, shapes,
    versions.

    Raises :class:`WorkloadError` when the model or data cannot be loaded or do not fit together,
    and :class:`TunerError` when the child's answer cannot be read.
    """
    env = inspect_environment(spec.workload.backend)
    run = run_child(inspect_request(spec), env, timeout_s)
    result = _inspection(run)
    if result.get("status") != "ok":
        raise WorkloadError(str(result.get("error", "loading the workload failed")))
    missing = [key for key in _INSPECTED if key not in result]
    if missing:
        raise TunerError(f"the workload check's result lacks {', '.join(missing)}")
    return result


def _inspection(run: ChildRun) -> dict[str, Any]:
    """The workload check's result as a dict; one clear line when there is none to read."""
    if run.result_text is None:
        raise _died_without_result(run)
    try:
        result = json.loads(run.result_text)
    except ValueError:
        result = None
    if not isinstance(result, dict):
        excerpt = " ".join(run.result_text.split())[:80]
        raise TunerError(
            f"the workload check (exit code {run.returncode}) left a result that is not a "
            f"JSON object: {excerpt!r}"
        )
    return result


def _died_without_result(run: ChildRun) -> WorkloadError:
    """What to say when the workload check left no result: its exit code, and the last thing it
    said that is not TensorFlow's logging (a CUDA driver line explains nothing)."""
    said = last_message(run.stderr_tail)
    detail = (
        f": {said}"
        if said
        else "; it printed nothing but TensorFlow's logging (does the workload call sys.exit "
        "or os._exit while loading?)"
    )
    return WorkloadError(f"loading the workload failed (exit code {run.returncode}){detail}")


def batch_limit(spec: StudySpec, n_train: int | None) -> int:
    """The largest global batch a trial can train at: within the training set (when its size is
    known) and, under a sample budget, with enough steps for its timed windows."""
    limits = [n_train] if n_train is not None else []
    if spec.search.train_samples is not None:
        limits.append(spec.search.train_samples // (MIN_TIMED_WINDOWS + 1))
    return min(limits) if limits else 2**31


def check_grid(spec: StudySpec, plan: DevicePlan, n_train: int | None = None) -> None:
    """Every global batch must split evenly over the replicas, fit in the training set and, under
    a sample budget, leave a trial its timed windows."""
    budget = spec.search.train_samples
    _check_target(spec, n_train)
    for batch in spec.search.global_batch_sizes:
        if budget is not None and batch > batch_limit(spec, None):
            raise ConfigError(
                f"train_samples {budget} gives global batch {batch} fewer than "
                f"{MIN_TIMED_WINDOWS + 1} steps (one warm-up and {MIN_TIMED_WINDOWS} timed "
                f"windows); raise train_samples to at least {min_samples(batch)}"
            )
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


def _check_target(spec: StudySpec, n_train: int | None) -> None:
    """A loss target's cadence must fall at the same samples for every batch of the grid and
    leave checks in the budget: refused here, before any trial, not in the first one."""
    search = spec.search
    if search.target_loss is None:
        return
    budget = budget_samples(search.train_samples, search.epochs, n_train)
    if search.eval_every_samples is not None:
        check_cadence(search.eval_every_samples, search.global_batch_sizes, budget)
    elif budget is not None:
        default_cadence(search.global_batch_sizes, budget)


def prepare(
    study: optuna.Study,
    spec: StudySpec,
    plan: DevicePlan,
    n_train: int,
    *,
    probe: bool,
    baseline: bool,
    timeout_s: float,
    observer: SearchObserver,
) -> int | None:
    """Before the grid: with ``probe``, bisect the grid's sizes with short runs; with
    ``baseline`` (and several replicas, once per device signature and precision), record a
    single-device trial at the base batch for speedup and scaling efficiency. Both are stored on
    ``study``.

    Returns the smallest global batch a probe of these devices (now or before) found out of
    memory, if any.
    """
    if probe:
        observer.note("probing the largest global batch that fits…")
        found = run_probe(
            spec, plan, n_train, grid=spec.search.global_batch_sizes, note=observer.note
        )
        store(study, "probes", plan, found)
    if baseline and plan.num_replicas > 1:
        for precision in spec.search.precisions:
            prepare_baseline(study, spec, plan, precision, timeout_s=timeout_s, observer=observer)
    return probed_oom(study, plan)


def prepare_baseline(
    study: optuna.Study,
    spec: StudySpec,
    plan: DevicePlan,
    precision: str,
    *,
    timeout_s: float,
    observer: SearchObserver,
) -> None:
    """Run and store the single-device baseline at ``precision`` unless the study holds one for
    ``plan``'s devices at it (speedups compare like with like: one baseline per precision), or
    reuse one another study in the storage measured of the same training
    (:mod:`tuner.driver.baseline_reuse`)."""
    signature = plan.device_signature
    baselines = study.user_attrs.get("baselines", {})
    if baseline_at(baselines, signature, precision) is not None:
        return
    several = len(spec.search.precisions) > 1
    at = f", precision {precision}" if several else ""
    key = reuse_key(baseline_request(spec, plan, precision), study.user_attrs, signature)
    reused = find_baseline(study, key, spec.search.max_repeats)
    if reused is not None:
        source, reference = reused
        reference = {**reference, "reused_from": source}
        observer.note(
            f"single-device baseline at global batch {spec.search.base_batch_size}{at}: reusing "
            f"the {len(reference['repeats'])} runs study {source!r} measured of the same "
            "training on the same devices, host and versions"
        )
    else:
        observer.note(f"single-device baseline at global batch {spec.search.base_batch_size}{at}…")
        reference = run_baseline(spec, plan, timeout_s=timeout_s, precision=precision)
        if reference["status"] != "ok":  # not stored: the next run tries again
            failed = f"the baseline{' at ' + precision if several else ''} failed"
            observer.note(f"{failed} ({reference['status']}): {reference['error']}")
            return
        reference.update(reuse_key=key, measured_at=_now())
    stored_as = baseline_key(baselines, signature, precision, first_precision(spec))
    study.set_user_attr("baselines", {**baselines, stored_as: reference})


def store(study: optuna.Study, attr: str, plan: DevicePlan, record: dict[str, Any]) -> None:
    """Set ``study.user_attrs[attr][signature] = record`` for ``plan``'s device signature."""
    records = dict(study.user_attrs.get(attr, {}))
    records[plan.device_signature] = record
    study.set_user_attr(attr, records)


def probed_oom(study: optuna.Study, plan: DevicePlan) -> int | None:
    """The smallest global batch a probe of ``plan``'s devices found out of memory, if any."""
    probes = study.user_attrs.get("probes", {})
    found: int | None = probes.get(plan.device_signature, {}).get("smallest_oom_batch")
    return found


def run_baseline(
    spec: StudySpec,
    plan: DevicePlan,
    *,
    timeout_s: float = DEFAULT_TRIAL_TIMEOUT_S,
    precision: str | None = None,
) -> dict[str, Any]:
    """The single-device reference for speedup and scaling efficiency: the base batch and base
    learning rate on one device at ``precision`` (default: the spec's first), run
    ``max_repeats`` times in fresh children (the speedup's interval needs the baseline's
    run-to-run noise too). It trains its whole budget, target or not: it measures throughput.
    Returns the record stored on the study (it names its precision)."""
    single = plan.single_device()
    base = spec.search.base_batch_size
    precision = precision or first_precision(spec)
    record: dict[str, Any] = {
        "device_signature": plan.device_signature,
        "devices": single.device_names,
        "global_batch_size": base,
        "learning_rate": spec.search.base_lr,
        "precision": precision,
    }
    runs: list[dict[str, Any]] = []
    request = baseline_request(spec, plan, precision)
    for _ in range(spec.search.max_repeats):
        run = run_child(request, single.child_environment(), timeout_s)
        outcome = classify(run, memory_capped=plan.memory_limit_bytes is not None)
        if outcome.values is None:
            if not runs:  # nothing measured: the record says why, and is not stored
                return {**record, "status": outcome.status, "error": outcome.error}
            break
        runs.append({"values": outcome.values, "attrs": outcome.attrs})
    return {**record, **_baseline_measurement(runs)}


def baseline_request(spec: StudySpec, plan: DevicePlan, precision: str) -> dict[str, Any]:
    """What each baseline run is sent: the base batch and learning rate on ``plan``'s first
    device at ``precision``, its whole budget whatever the target."""
    return trial_request(
        spec,
        plan.single_device(),
        spec.search.base_batch_size,
        spec.search.base_lr,
        precision=precision,
        target_loss=None,
        eval_every_samples=None,
    )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _baseline_measurement(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The baseline's figures over its runs: the median throughput, its interval (over the runs,
    or over the one run's windows), and the first run's details."""
    medians = [run["values"][1] for run in runs]
    first = runs[0]["attrs"]
    interval = throughput_interval(medians, window_rates(first))
    return {
        "status": "ok",
        "error": None,
        "final_loss": statistics.median(run["values"][0] for run in runs),
        "throughput": statistics.median(medians),
        "repeats": medians,
        "throughput_ci": None if interval is None else interval.as_list(),
        "throughput_ci_method": None if interval is None else interval.method,
        "throughput_spread": first.get("throughput_spread"),
        "epoch_throughputs": first.get("epoch_throughputs"),
        "timings": first.get("timings"),
        "peak_rss_bytes": first.get("peak_rss_bytes"),
    }
