"""The input check before a search, before anything is stored: grid, options and workload."""

from __future__ import annotations

import logging
from typing import Any

from tuner.core.devices import DevicePlan, inspect_environment
from tuner.core.errors import ConfigError, TunerError, WorkloadError
from tuner.core.oom import last_message
from tuner.core.options import named
from tuner.core.outcome import ChildRun, read_result
from tuner.core.protocol import DEFAULT_TRIAL_TIMEOUT_S, Result
from tuner.core.spec import StudySpec
from tuner.core.windows import MIN_TIMED_WINDOWS, min_samples
from tuner.driver.children import ChildRunner, inspect_request, target_of

_log = logging.getLogger(__name__)

_INSPECTED = ("n_train", "n_val", "parameters")
"""What the rest of the search needs from the workload check's result."""


def check(
    spec: StudySpec,
    plan: DevicePlan,
    *,
    runner: ChildRunner,
    probe: bool = False,
    noise_scale: bool = False,
    timeout_s: float = DEFAULT_TRIAL_TIMEOUT_S,
) -> dict[str, Any]:
    """Check the grid, the options and the workload (in a child killed after ``timeout_s``, one
    step of the noise meter with ``noise_scale``); what the workload check found. Raises
    :class:`ConfigError` for bad input."""
    if probe and spec.search.grid.joint:
        raise ConfigError(
            "--probe finds one boundary for one model; with model_hyperparameters = search each "
            "model configuration has its own (out-of-memory is tracked per configuration)"
        )
    check_grid(spec, plan)
    info = inspect_workload(
        spec,
        runner=runner,
        noise_scale=noise_scale,
        timeout_s=timeout_s,
        replicas=plan.num_replicas,
    )
    check_grid(spec, plan, n_train=info["n_train"])
    lines = (
        compile_line(spec.workload.model, info.get("compile")),
        optimizers_line(spec.workload.model, info.get("compile")),
        fit_line(spec.workload.model, info.get("fit_override")),
        info.get("loss_warning"),
        noise_line(info),
    )
    for line in lines:
        if line is not None:
            _log.warning("%s", line)  # once, before anything is stored or trained
    if spec.search.grid.joint and not info.get("hypermodel"):
        raise ConfigError(
            f"model_hyperparameters = search needs a KerasTuner hypermodel; {spec.workload.model} "
            "is a plain model builder (use model_hyperparameters = defaults)"
        )
    return info


def compile_line(model: str, described: dict[str, Any] | None) -> str | None:
    """The line to say when the build's compile overrides the spec's loss or optimizer."""
    overrides = (described or {}).get("overrides") or {}
    if not described or not overrides:
        return None
    used = ", ".join(f"{key} {_name(described.get(key))}" for key in overrides)
    named = ", ".join(f"{key} {value!r}" for key, value in overrides.items())
    return f"{model} compiles its model: trials train with its {used}, not the spec's {named}"


def optimizers_line(model: str, described: dict[str, Any] | None) -> str | None:
    """The line to say when the build's model holds optimizers besides its compiled one (the
    workload check's ``own_optimizers``), which train at the build's rates."""
    own = (described or {}).get("own_optimizers")
    if not own:
        return None
    return (
        f"{model}'s model holds optimizers of its own ({', '.join(own)}), which tuner does not "
        "set: whatever its train_step updates with them trains at the build's learning rates, "
        "not the rule's (the trials store the compiled optimizer's)"
    )


def fit_line(model: str, declared: list[str] | None) -> str | None:
    """The line to say when a ``HyperModel`` overrides ``fit``, which tuner never calls
    (``declared``: the hyperparameters it declares, the check's ``fit_override``)."""
    if declared is None:
        return None
    unused = (
        f"the hyperparameters it declares ({', '.join(declared)}) are not used"
        if declared
        else "what it sets is not used"
    )
    return (
        f"{model} overrides HyperModel.fit, which tuner does not call: trials train with "
        f"tuner's own batch size and learning rate, so {unused}"
    )


def noise_line(info: dict[str, Any]) -> str | None:
    """The line to say when the workload check found that the noise meter cannot measure."""
    reason = info.get("noise_scale_skipped")
    return f"the gradient noise scale will not be measured: {reason}" if reason else None


def _name(value: Any) -> str:
    """A described loss or optimizer (:func:`tuner.worker.compiled.named`) in a few words."""
    if isinstance(value, dict) and ("class" in value or "function" in value):
        return f"{value.get('class') or value.get('function')} ({value.get('module')})"
    return str(value)


def inspect_workload(
    spec: StudySpec,
    *,
    runner: ChildRunner,
    timeout_s: float = DEFAULT_TRIAL_TIMEOUT_S,
    noise_scale: bool = False,
    replicas: int = 1,
) -> dict[str, Any]:
    """Load the workload once in a CPU-only child: sizes, shapes, versions, whether the noise
    meter measures. Raises :class:`WorkloadError` when the model or data cannot be loaded or do
    not fit together, :class:`TunerError` when the child's answer cannot be read or is late."""
    env = inspect_environment(spec.workload.backend)
    request = inspect_request(spec, noise_scale=noise_scale, replicas=replicas)
    run = runner.run(request, env, timeout_s)
    if run.timed_out:
        raise TunerError(
            f"the workload check did not finish within {timeout_s:g} s ({named('trial_timeout')}): "
            "loading the workload and one training step must fit in it; raise "
            f"{named('trial_timeout')} or load less"
        )
    result = _inspection(run)
    if result.status != "ok":
        raise WorkloadError(result.error or "loading the workload failed")
    missing = [key for key in _INSPECTED if key not in result.payload]
    if missing:
        raise TunerError(f"the workload check's result lacks {', '.join(missing)}")
    return dict(result.payload)


def _inspection(run: ChildRun) -> Result:
    """The workload check's result; one clear line when there is none to read."""
    if run.result_text is None:
        # Its exit code, and the last thing it said that is not TensorFlow's logging.
        said = last_message(run.stderr_tail)
        detail = (
            f": {said}"
            if said
            else "; it printed nothing but TensorFlow's logging (does the workload call sys.exit "
            "or os._exit while loading?)"
        )
        raise WorkloadError(f"loading the workload failed (exit code {run.returncode}){detail}")
    read = read_result(run.result_text)
    if read is None:
        excerpt = " ".join(run.result_text.split())[:80]
        raise TunerError(
            f"the workload check (exit code {run.returncode}) left a result that is not a "
            f"JSON object: {excerpt!r}"
        )
    if isinstance(read, str):
        raise TunerError(f"the workload check's result cannot be read: {read}")
    return read


def batch_limit(spec: StudySpec, n_train: int | None) -> int:
    """The largest global batch a trial can train at: within the training set (when its size is
    known) and, under a sample budget, with enough steps for its timed windows."""
    limits = [n_train] if n_train is not None else []
    if spec.search.run.train_samples is not None:
        limits.append(spec.search.run.train_samples // (MIN_TIMED_WINDOWS + 1))
    return min(limits) if limits else 2**31


def check_grid(spec: StudySpec, plan: DevicePlan, n_train: int | None = None) -> None:
    """Every global batch must split over the replicas, fit the data and leave timed windows."""
    budget = spec.search.run.train_samples
    # A loss target's cadence that does not suit the grid: refused now, not in the first trial.
    target_of(spec, n_train)
    for batch in spec.search.grid.global_batch_sizes:
        if budget is not None and batch > batch_limit(spec, None):
            raise ConfigError(
                f"train_samples {budget} gives global batch {batch} fewer than "
                f"{MIN_TIMED_WINDOWS + 1} steps (one warm-up and {MIN_TIMED_WINDOWS} timed "
                f"windows); raise train_samples to at least {min_samples(batch)}"
            )
        if batch % plan.num_replicas:
            raise ConfigError(
                f"global batch {batch} does not divide by {plan.num_replicas} replicas; choose a "
                f"{named('base_batch_size')} that is a multiple of {plan.num_replicas}"
            )
        if n_train is not None and batch > n_train:
            raise ConfigError(
                f"global batch {batch} is larger than the training set ({n_train} samples); "
                f"use smaller {named('base_batch_size')} or {named('batch_multipliers')}"
            )
