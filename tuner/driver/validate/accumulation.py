"""``tuner validate --accumulation K``: prove that K accumulated micro-steps of batch b give the
weights of one true step at K × b (:mod:`tuner.core.accumulation`).

Two validation children on the same devices, seed, initial weights and examples: N steps at
G = K × b against K × N micro-steps of b with Keras's ``gradient_accumulation_steps=K``, both at
the rule's learning rate for G; the model's variables after training are compared against how
far they moved (the optimizer's are not: accumulation adds its own accumulators). A model that
misses the tolerance is judged again against a control (the true steps, each batch's examples
reversed).

Both children multiply in full float32 (:data:`FULL_FLOAT32`): NVIDIA GPUs may multiply float32
matrices in TensorFloat-32, whose rounding has nothing to do with accumulation. On an H200 with
the default precision the proof measured 6.8e-6 against 4-5e-7 on a CPU, 1.5x under the
tolerance (benchmarks/RESULTS.md, "GPU (H200)"); in full float32 there it is still to be measured.
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import partial
from typing import Any

from tuner.core.accumulation import failure_line
from tuner.core.devices import DevicePlan
from tuner.core.errors import ConfigError, TunerError
from tuner.core.protocol import ValidateRequest
from tuner.core.scaling import scaled_learning_rate
from tuner.core.spec import StudySpec
from tuner.driver.children import ChildRunner, child_runner, owned_folder, validate_request
from tuner.driver.validate.accumulation_checks import accumulation_check, controlled_accumulation
from tuner.driver.validate.checks import Check
from tuner.driver.validate.engine import Engine, report

FULL_FLOAT32 = {"JAX_DEFAULT_MATMUL_PRECISION": "highest", "NVIDIA_TF32_OVERRIDE": "0"}
"""What turns TensorFloat-32 off in a child: JAX's default matmul precision, and the switch
TensorFlow's CUDA kernels read. Neither changes anything on a CPU."""


def run_accumulation_validation(
    spec: StudySpec,
    plan: DevicePlan,
    steps_k: int,
    *,
    micro_batch: int | None,
    lr_rule: str,
    steps: int,
    timeout_s: float,
    runner: ChildRunner | None = None,
) -> dict[str, Any]:
    """Run the true-batch and the accumulating child on ``plan``; the JSON report."""
    micro = micro_batch or spec.search.grid.base_batch_size
    _check(plan, steps_k, micro)
    batch = steps_k * micro
    lr = scaled_learning_rate(
        lr_rule, spec.search.grid.base_lr, batch, spec.search.grid.base_batch_size
    )
    request = validate_request(spec, plan, batch, lr, steps=steps, loss_reduction="global")
    with owned_folder("accumulation") as folder:
        engine = Engine(runner if runner is not None else child_runner(), timeout_s, folder)
        run = partial(_run, engine, spec.workload.backend, plan, request)
        (true, one, initial), (accumulated, many, _) = run(1), run(steps_k)
        check = _compare(true, accumulated, (one, many, initial), spec.workload.backend)
        apart = float(check.figures.get("model_relative_difference", math.inf))
        if not check.passed and math.isfinite(apart):  # rounding, or wrong? the control says
            _, again, _ = run(1, control=True)
            check = controlled_accumulation(check, _model_figures(true, one, again, initial))
    settings = {
        "accumulation_steps": steps_k,
        "global_batch_size": batch,
        "micro_batch_size": micro,
        "micro_batch_per_replica": micro // plan.num_replicas,
        "learning_rate": lr,
        "lr_rule": lr_rule,
        "steps": true["steps"],
        "micro_steps": accumulated["steps"],
    }
    return report(spec, plan, [check], accumulated, settings)


def _run(
    engine: Engine,
    backend: str,
    plan: DevicePlan,
    request: ValidateRequest,
    accumulate: int,
    *,
    control: bool = False,
) -> tuple[dict[str, Any], Any, Any]:
    """One validation child in ``accumulate`` micro-steps a step, in full float32: its result,
    and its final and initial weights. ``control``: each batch's examples reversed."""
    from tuner.driver.validate import weights  # numpy: not on the way of `tuner --help`

    request = replace(request, accumulation_steps=accumulate)
    try:
        read, path = engine.run(request, plan, str(accumulate), env=FULL_FLOAT32, control=control)
    except TunerError as exc:  # Keras's known failure under TensorFlow: said plainly
        line = failure_line(str(exc), backend)
        raise TunerError(str(exc) if line == str(exc) else line) from exc
    final, initial = weights.load(path)
    return read, final, initial


def _model_figures(true: dict[str, Any], one: Any, other: Any, initial: Any) -> dict[str, Any]:
    """The model's variables after the true steps (``one``) against ``other``'s; the optimizers'
    variables differ under accumulation (accumulators, micro-step counts) and are not compared."""
    from tuner.driver.validate import weights

    keep = range(int(true.get("model_variables") or 0))
    return weights.compare(
        {i: one[i] for i in keep},
        {i: other[i] for i in keep},
        {i: initial[i] for i in keep if i in initial},
        list(true.get("variable_names", []))[: len(keep)],
    )


def _compare(
    true: dict[str, Any],
    accumulated: dict[str, Any],
    finals: tuple[Any, Any, Any],
    backend: str,
) -> Check:
    """The model's variables after the true steps against those after the accumulated ones."""
    one, many, initial = finals
    compared = _model_figures(true, one, many, initial)
    sparse = list(accumulated.get("embedding_layers", [])) if backend == "tensorflow" else []
    return accumulation_check(compared, list(accumulated.get("batch_norm_layers", [])), sparse)


def _check(plan: DevicePlan, steps_k: int, micro: int) -> None:
    """Refuse an accumulation that cannot be compared (exit code 2)."""
    if steps_k < 2:
        raise ConfigError(f"--accumulation must be at least 2 micro-steps, got {steps_k}")
    if micro % plan.num_replicas:
        raise ConfigError(
            f"micro-batch {micro} (--batch-size) does not divide by {plan.num_replicas} replicas"
        )
