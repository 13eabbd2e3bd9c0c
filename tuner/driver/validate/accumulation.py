"""``tuner validate --accumulation K``: prove that K accumulated micro-steps of batch b give the
weights of one true step at K × b (:mod:`tuner.core.accumulation`; docs/guide/accumulation.md).

N steps at G = K × b against K × N micro-steps of b with ``gradient_accumulation_steps=K``, alike
but for that; the model's variables are compared (not the optimizer's: accumulation adds its
own), and judged again against a control run where they miss the tolerance.
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
from tuner.driver.validate.checks import Check, judged
from tuner.driver.validate.engine import Engine, report

FULL_FLOAT32 = {"JAX_DEFAULT_MATMUL_PRECISION": "highest", "NVIDIA_TF32_OVERRIDE": "0"}
"""What turns TensorFloat-32 off in both children (JAX's matmul precision, the switch TensorFlow's
CUDA kernels read; nothing on a CPU): its rounding has nothing to do with accumulation (on an
H200 by default the proof measured 6.8e-6 against 4-5e-7 on a CPU)."""


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
        tensorflow = spec.workload.backend == "tensorflow"
        sparse = list(accumulated.get("embedding_layers", [])) if tensorflow else []
        batch_norm = list(accumulated.get("batch_norm_layers", []))
        check = accumulation_check(_model_figures(true, one, many, initial), batch_norm, sparse)
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
        raise TunerError(failure_line(str(exc), backend)) from exc
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


def _check(plan: DevicePlan, steps_k: int, micro: int) -> None:
    """Refuse an accumulation that cannot be compared (exit code 2)."""
    if steps_k < 2:
        raise ConfigError(f"--accumulation must be at least 2 micro-steps, got {steps_k}")
    if micro % plan.num_replicas:
        raise ConfigError(
            f"micro-batch {micro} (--batch-size) does not divide by {plan.num_replicas} replicas"
        )


ACCUMULATION_RTOL = 1e-5
"""Tolerance of ``tuner validate --accumulation``: the model's weights after K accumulated
micro-steps against one true step at K × the batch, relative to how far they moved. The mean of
K micro-batch means is the mean over the batch up to float32 rounding order (~1e-7 per step)."""


def accumulation_check(
    figures: dict[str, Any], batch_norm: list[str], sparse: list[str] | None = None
) -> Check:
    """The weights after accumulated micro-steps against true steps; BatchNormalization, or
    dominating ``sparse`` layers (:data:`SPARSE_SQUARED`), are reported, not held to it."""
    figures = {**figures, "tolerance": ACCUMULATION_RTOL, "batch_norm_layers": batch_norm}
    worst = float(figures.get("model_relative_difference", float("inf")))
    summary = (
        f"weights after accumulated micro-steps vs true steps: relative difference {worst:.1e} "
        f"({figures.get('variables_compared', 0)} variables; tolerance {ACCUMULATION_RTOL:.0e} "
        "of how far they moved)"
    )
    if batch_norm:
        warning = (
            f"BatchNormalization ({', '.join(batch_norm[:3])}) normalizes each micro-batch by "
            "its own statistics and updates its moving averages once per micro-step, so "
            "accumulation is not one step at the whole batch: compared, not held to the tolerance"
        )
        return Check("accumulated weights", True, summary, figures, warning)
    passed = int(figures.get("variables_compared", 0)) > 0 and worst <= ACCUMULATION_RTOL
    if not passed and sparse and int(figures.get("variables_compared", 0)) > 0:
        figures["embedding_layers"] = sparse
        warning = SPARSE_SQUARED.format(layers=", ".join(sparse[:3]))
        return Check("accumulated weights", True, summary, figures, warning)
    return Check("accumulated weights", passed, summary, figures)


def controlled_accumulation(check: Check, control: dict[str, Any]) -> Check:
    """``check``, or passed with a warning within :data:`CONTROL_FACTOR` times the control's."""
    if check.passed or not control.get("compared"):
        return check
    apart = float(check.figures.get("model_relative_difference", float("inf")))
    floor = float(control.get("model_relative_difference", float("inf")))
    warning = (
        f"accumulated weights: the accumulated micro-steps differ from the true steps by "
        f"{apart:.1e}, and the true steps from themselves with each batch's examples reversed "
        f"by {floor:.1e}: float32 rounding order alone moves this model's training that far (a "
        "ReLU or max-pooling tie that flips, amplified over the steps), so a wrong accumulation "
        "smaller than that cannot be told from it; fewer --steps compare more strictly"
    )
    return judged(check, apart, floor, "true steps, batches reversed", warning)


SPARSE_SQUARED = (
    "Embedding ({layers}) under TensorFlow: a true step hands Keras's optimizer its gradient as "
    "IndexedSlices, and an optimizer that squares the gradient (Adam, RMSprop, Adagrad, ...) "
    "squares each slice before a row repeated in the batch is summed (sum of squares), while "
    "an accumulated step sums the micro-steps into a dense gradient first (square of the sum): "
    "Keras's own two paths differ on those rows, not the distribution (SGD and the JAX backend "
    "agree): compared, not held to the tolerance"
)
"""Why a TensorFlow model with Embedding layers is not held to the accumulation tolerance
(measured: docs/guide/accumulation.md)."""
