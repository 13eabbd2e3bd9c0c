"""What runs before the grid: the workload check, and the probe and single-device baseline.

Each runs in a child like a trial; nothing here writes to the storage except through the study
object the caller passes in.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from tuner.core.devices import DevicePlan
from tuner.core.errors import ConfigError, TunerError, WorkloadError
from tuner.core.outcome import classify
from tuner.core.probe import GridProbe, ProbeSearch
from tuner.core.protocol import DEFAULT_TRIAL_TIMEOUT_S
from tuner.core.scaling import scaled_learning_rate
from tuner.core.spec import StudySpec
from tuner.driver.objective import device_signature, trial_request, workload_dict
from tuner.driver.runner import run_child

INSPECT_TIMEOUT_S = 600.0


def inspect_workload(spec: StudySpec, timeout_s: float = INSPECT_TIMEOUT_S) -> dict[str, Any]:
    """Load the workload once in a CPU-only child: sizes, shapes, versions.

    Raises :class:`WorkloadError` when the model or data cannot be loaded or do not fit together.
    """
    request = {
        "mode": "inspect",
        "workload": workload_dict(spec),
        "loop": spec.search.loop_kind,
        "lr_rules": list(spec.search.lr_rules),
        "max_ratio": max(spec.search.batch_multipliers),
    }
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


def run_probe(
    spec: StudySpec,
    plan: DevicePlan,
    n_train: int,
    *,
    resolution: int | None = None,
    grid: tuple[int, ...] | None = None,
    steps: int = 5,
    timeout_s: float = 600.0,
    note: Callable[[str], None] = lambda message: None,
) -> dict[str, Any]:
    """Find the largest global batch that fits on ``plan``'s devices with short runs (``steps``
    steps, each in a fresh child): bisection over ``grid`` when given (what a search needs), else
    doubling from the base batch until out-of-memory, then bisection to ``resolution`` samples
    (default: an eighth of the base batch). Returns the record stored on the study."""
    base = spec.search.base_batch_size
    step = plan.num_replicas
    search: ProbeSearch | GridProbe
    if grid:
        search = GridProbe(grid)
    else:
        search = ProbeSearch(
            start=max(step, base // step * step),
            limit=n_train,
            step=step,
            resolution=resolution or max(step, base // 8),
        )
    attempts = []
    started = time.perf_counter()
    while (batch := search.next_batch()) is not None:
        lr = scaled_learning_rate("none", spec.search.base_lr, batch, base)
        request = trial_request(
            spec, plan, batch, lr, mode="probe", epochs=1, steps_per_epoch=steps
        )
        run = run_child(request, plan.child_environment(), timeout_s)
        outcome = classify(run, memory_capped=plan.memory_limit_bytes is not None)
        if outcome.status not in ("ok", "oom"):
            raise TunerError(
                f"probe run at global batch {batch} failed ({outcome.status}): {outcome.error}"
            )
        search.record(batch, fits=outcome.status == "ok")
        attempts.append({"batch": batch, "fits": outcome.status == "ok", "seconds": run.wall_s})
        note(f"probe: global batch {batch} {'fits' if outcome.status == 'ok' else 'out of memory'}")
    return {
        "device_signature": device_signature(plan),
        "largest_fitting_batch": search.largest_fitting,
        "smallest_oom_batch": search.smallest_failing,
        "resolution": search.resolution,
        "limit": n_train,
        "steps": steps,
        "launches": len(attempts),
        "attempts": attempts,
        "wall_s": time.perf_counter() - started,
    }


def run_baseline(
    spec: StudySpec, plan: DevicePlan, *, timeout_s: float = DEFAULT_TRIAL_TIMEOUT_S
) -> dict[str, Any]:
    """One trial on a single device at the base batch and base learning rate: the reference for
    speedup and scaling efficiency. Returns the record stored on the study."""
    single = plan.single_device()
    base = spec.search.base_batch_size
    run = run_child(
        trial_request(spec, single, base, spec.search.base_lr),
        single.child_environment(),
        timeout_s,
    )
    outcome = classify(run, memory_capped=plan.memory_limit_bytes is not None)
    record: dict[str, Any] = {
        "device_signature": device_signature(plan),
        "devices": single.device_names,
        "global_batch_size": base,
        "learning_rate": spec.search.base_lr,
        "status": outcome.status,
        "error": outcome.error,
    }
    if outcome.values is not None:
        record["final_loss"], record["throughput"] = outcome.values
        record["throughput_spread"] = outcome.attrs.get("throughput_spread")
    record["timings"] = outcome.attrs.get("timings")
    return record
