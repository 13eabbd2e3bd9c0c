"""``tuner validate``: prove that the multi-replica run is right before trusting its numbers: the
same workload, seed, initial weights and batches on one device and on N replicas at global batch
G, stochastic layers made deterministic alike (:mod:`tuner.worker.determinism`), compared by
:mod:`tuner.driver.validate.checks` (docs/guide/validate.md).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from tuner.core.devices import DevicePlan
from tuner.core.errors import ConfigError
from tuner.core.options import DEFAULT_VALIDATE_RULE, DEFAULT_VALIDATE_STEPS
from tuner.core.protocol import DEFAULT_TRIAL_TIMEOUT_S, ValidateRequest
from tuner.core.scaling import scaled_learning_rate
from tuner.core.spec import LOSS_REDUCTIONS, StudySpec
from tuner.driver.children import ChildRunner, child_runner, owned_folder, validate_request
from tuner.driver.validate.accumulation import run_accumulation_validation
from tuner.driver.validate.checks import CONTROLLED, Check, evaluate, loss_difference
from tuner.driver.validate.engine import Engine, report


def run_validation(
    spec: StudySpec,
    plan: DevicePlan,
    *,
    loss_reduction: str = LOSS_REDUCTIONS[0],
    global_batch: int | None = None,
    lr_rule: str = DEFAULT_VALIDATE_RULE,
    steps: int = DEFAULT_VALIDATE_STEPS,
    timeout_s: float = DEFAULT_TRIAL_TIMEOUT_S,
    runner: ChildRunner | None = None,
    accumulation: int | None = None,
) -> dict[str, Any]:
    """The one-device and N-replica children's JSON report (``accumulation``: that proof)."""
    if accumulation is not None:
        return run_accumulation_validation(
            spec,
            plan,
            accumulation,
            micro_batch=global_batch,
            lr_rule=lr_rule,
            steps=steps,
            timeout_s=timeout_s,
            runner=runner,
        )
    batch = global_batch or spec.search.grid.base_batch_size
    _check_options(spec, plan, loss_reduction, batch)
    lr = scaled_learning_rate(
        lr_rule, spec.search.grid.base_lr, batch, spec.search.grid.base_batch_size
    )
    request = partial(validate_request, spec, batch=batch, lr=lr, steps=steps,
                      loss_reduction=loss_reduction)  # fmt: skip
    with owned_folder("validate") as folder:
        engine = Engine(runner if runner is not None else child_runner(), timeout_s, folder)
        checks, multi = _prove(engine, plan, request, (batch, lr))
    settings = {"loss_reduction": loss_reduction, "global_batch_size": batch,
                "learning_rate": lr, "lr_rule": lr_rule, "steps": multi["steps"]}  # fmt: skip
    return report(spec, plan, checks, multi, settings)


def _prove(
    engine: Engine,
    plan: DevicePlan,
    request: Callable[[DevicePlan], ValidateRequest],
    batch_lr: tuple[int, float],
) -> tuple[list[Check], dict[str, Any]]:
    """One device, then the N replicas: their checks, judged again against the control run when
    loss parity or the final weights miss their fixed tolerance; and the N-replica result."""
    from tuner.driver.validate import weights  # numpy: not on the way of `tuner --help`

    one_plan = plan.single_device()
    single, one = engine.run(request(one_plan), one_plan, "1")
    multi, many = engine.run(request(plan), plan, str(plan.num_replicas))
    names, count = list(multi.get("variable_names", [])), multi.get("model_variables")
    compared = weights.compare_files(one, many, names, count)
    batch, lr = batch_lr
    judge = partial(evaluate, single, multi, global_batch=batch, learning_rate=lr, weights=compared)
    checks = judge(control=None)
    if not any(c.name in CONTROLLED and not c.passed for c in checks):
        return checks, multi
    # The control: how far rounding order alone moves this model (CONTROL_FACTOR).
    again, path = engine.run(request(one_plan), one_plan, "1", control=True)
    control = {
        "loss_relative_difference": loss_difference(single, again),
        "weights": weights.compare_files(one, path, names, count),
    }
    return judge(control=control), multi


def reduces_its_own_loss(spec: StudySpec) -> bool:
    """Whether the child reduces the loss over replicas itself, so that ``--loss-reduction
    replica-mean`` can plant the wrong reduction: TensorFlow's custom loops, and every run under
    JAX (fit, with the loss the child wraps). TensorFlow's fit reduces in Keras, out of reach."""
    return spec.workload.backend == "jax" or spec.search.run.loop_kind != "fit"


def _check_options(spec: StudySpec, plan: DevicePlan, loss_reduction: str, batch: int) -> None:
    """Refuse a validation that cannot compare anything (exit code 2)."""
    if plan.num_replicas < 2:
        raise ConfigError("validate compares one device with several: select at least 2 devices")
    if loss_reduction != "global" and not reduces_its_own_loss(spec):
        raise ConfigError(
            f"--loss-reduction {loss_reduction} applies to custom loops only under TensorFlow "
            "(its fit averages for you); under --backend jax it applies to fit"
        )
    if batch % plan.num_replicas:
        raise ConfigError(f"global batch {batch} does not divide by {plan.num_replicas} replicas")
