"""The single-device baseline: the base configuration on one device, ``max_repeats`` times, for
speedup and scaling efficiency; stored on the study (``baselines``). A study without one reuses
the newest record of the same training (:func:`find_baseline`, by
:func:`tuner.driver.reuse.keys.reuse_key`; ``docs/guide/probe.md``), naming its study
(``reused_from``).
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import optuna

from tuner.core.configurations import window_rates
from tuner.core.devices import DevicePlan
from tuner.core.outcome import classify
from tuner.core.protocol import DEFAULT_TRIAL_TIMEOUT_S, TrialRequest
from tuner.core.recommend import baseline_at, baseline_key
from tuner.core.record import decode_study, store_study
from tuner.core.spec import StudySpec
from tuner.core.stats import throughput_interval
from tuner.driver.children import ChildRunner, first_precision, trial_request
from tuner.driver.observer import SearchObserver, observed
from tuner.driver.reuse.keys import reuse_key
from tuner.storage.guarded import storage_call


def prepare_baseline(
    study: optuna.Study,
    spec: StudySpec,
    plan: DevicePlan,
    precision: str,
    *,
    runner: ChildRunner,
    timeout_s: float,
    observer: SearchObserver,
) -> None:
    """Run and store the single-device baseline at ``precision`` unless the study holds one for
    ``plan``'s devices at it, or reuse one another study measured of the same training."""
    signature = plan.device_signature
    stored = storage_call(study, decode_study, study)
    baselines = stored.baselines or {}
    if baseline_at(baselines, signature, precision) is not None:
        observer.phase("baseline", 0)
        return
    several = len(spec.search.grid.precisions) > 1
    at = f", precision {precision}" if several else ""
    base = plan.baseline_batch(spec.search.grid.base_batch_size)
    what = "single-device" if plan.hosts == 1 else "one-host"
    key = reuse_key(baseline_request(spec, plan, precision), stored.flat, signature)
    reused = find_baseline(study, key, spec.search.decision.max_repeats)
    if reused is not None:
        source, reference = reused
        reference = {**reference, "reused_from": source}
        observer.phase("baseline", 0)
        observer.note(
            f"{what} baseline at global batch {base}{at}: reusing "
            f"the {len(reference['repeats'])} runs study {source!r} measured of the same "
            "training on the same devices, host and versions"
        )
    else:
        observer.note(f"{what} baseline at global batch {base}{at}…")
        observer.phase("baseline", spec.search.decision.max_repeats)
        runs = observed(runner, observer, f"baseline · batch {base}")
        reference = run_baseline(spec, plan, runner=runs, timeout_s=timeout_s, precision=precision)
        if reference["status"] != "ok":  # not stored: the next run tries again
            failed = f"the baseline{' at ' + precision if several else ''} failed"
            observer.note(f"{failed} ({reference['status']}): {reference['error']}")
            return
        reference.update(reuse_key=key, measured_at=datetime.now(UTC).isoformat(timespec="seconds"))
    stored_as = baseline_key(baselines, signature, precision, first_precision(spec))
    storage_call(study, store_study, study, "baselines", {**baselines, stored_as: reference})


def run_baseline(
    spec: StudySpec,
    plan: DevicePlan,
    *,
    runner: ChildRunner,
    timeout_s: float = DEFAULT_TRIAL_TIMEOUT_S,
    precision: str | None = None,
) -> dict[str, Any]:
    """The base configuration on one device (a gang: on one host, at its batch per device),
    ``max_repeats`` times, its whole budget."""
    single = plan.baseline_plan()
    precision = precision or first_precision(spec)
    record: dict[str, Any] = {
        "device_signature": plan.device_signature,
        "devices": single.device_names,
        "global_batch_size": plan.baseline_batch(spec.search.grid.base_batch_size),
        "learning_rate": spec.search.grid.base_lr,
        "precision": precision,
        **({"hosts": plan.hosts} if plan.hosts > 1 else {}),
    }
    runs: list[dict[str, Any]] = []
    request = baseline_request(spec, plan, precision)
    for _ in range(spec.search.decision.max_repeats):
        run = runner.run(request, single.child_environment(), timeout_s)
        outcome = classify(run, memory_capped=plan.memory_limit_bytes is not None)
        if outcome.values is None:
            if not runs:  # nothing measured: the record says why, and is not stored
                return {**record, "status": outcome.status, "error": outcome.error}
            break
        runs.append({"values": outcome.values, "attrs": outcome.attrs})
    return {**record, **_baseline_measurement(runs)}


def baseline_request(spec: StudySpec, plan: DevicePlan, precision: str) -> TrialRequest:
    """What each baseline run is sent: the base batch and learning rate on ``plan``'s first
    device (a gang: one host) at ``precision``, its whole budget whatever the target."""
    request = trial_request(
        spec,
        plan.baseline_plan(),
        plan.baseline_batch(spec.search.grid.base_batch_size),
        spec.search.grid.base_lr,
        precision=precision,
    )
    return replace(request, target=None)


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


def find_baseline(study: optuna.Study, key: str, repeats: int) -> tuple[str, dict[str, Any]] | None:
    """The newest baseline another study in ``study``'s storage stored under ``key`` with at
    least ``repeats`` runs, as ``(the study that measured it, the record)``; ``None`` if none."""
    # Optuna has no public handle on a study's storage; the views read it the same way.
    found = [
        (str(record.get("reused_from") or other.study_name), record)
        for other in storage_call(study, study._storage.get_all_studies)
        if other.study_name != study.study_name
        for record in (decode_study(other).baselines or {}).values()
        if _matches(record, key, repeats)
    ]
    return max(found, key=lambda pair: str(pair[1].get("measured_at", ""))) if found else None


def _matches(record: Any, key: str, repeats: int) -> bool:
    return (
        isinstance(record, dict)
        and record.get("reuse_key") == key
        and record.get("status") == "ok"
        and len(record.get("repeats") or ()) >= repeats
    )
