"""``tuner validate``: prove that the multi-replica run is right before trusting its numbers.

The same workload, seed, initial weights and batches (read once, replayed, their digests
compared: :func:`first_differing_batch`) run twice in child processes — on one
device and on N replicas, both at global batch G, their stochastic layers (Dropout, Gaussian
noise, random augmentation) made deterministic alike (:mod:`tuner.worker.determinism`) — and
five checks compare them:

* **loss parity** — the per-step losses agree within a relative tolerance set by float32 reduction
  order (splitting a batch's sum over replicas changes the order of additions, nothing else);
  losses off by one constant factor while the final weights agree pass with a named warning (a
  ``train_step`` that logs ``compute_loss``'s value, which Keras scales by 1/replicas);
* **final weights** — every variable (weights and optimizer slots) after the N steps agrees
  between the runs (:mod:`tuner.driver.validate.weights`): the direct evidence that the updates
  agree;
* **weight sync** — after training, every variable's per-replica copies are identical;
* **device use** — every replica processed exactly G/N examples per step (counted inside each
  replica's own step), plus peak memory and NVML utilisation per GPU where available;
* **learning rate** — the optimizer holds the rule's learning rate.

When loss parity or the final weights fail their fixed tolerance, a third child, the control,
runs one device again with each batch's examples reversed: how far rounding order alone moves
the model, against which those two are judged again
(:data:`~tuner.driver.validate.checks.CONTROL_FACTOR`).

The checks are pure (:mod:`tuner.driver.validate.checks`); ``run_validation`` runs the
children.
"""

from __future__ import annotations

import datetime as _dt
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tuner.core.devices import DevicePlan
from tuner.core.errors import ConfigError
from tuner.core.options import DEFAULT_VALIDATE_RULE, DEFAULT_VALIDATE_STEPS
from tuner.core.outcome import ChildRun, ok_payload
from tuner.core.protocol import DEFAULT_TRIAL_TIMEOUT_S
from tuner.core.scaling import scaled_learning_rate
from tuner.core.spec import LOSS_REDUCTIONS, StudySpec
from tuner.driver.children import ChildRunner, child_runner, validate_request
from tuner.driver.validate.accumulation import run_accumulation_validation
from tuner.driver.validate.checks import (
    CONTROLLED,
    REORDER_ENV,
    Check,
    evaluate,
    loss_difference,
)

DEFAULT_STEPS = DEFAULT_VALIDATE_STEPS
DEFAULT_RULE = DEFAULT_VALIDATE_RULE


def run_validation(
    spec: StudySpec,
    plan: DevicePlan,
    *,
    loss_reduction: str = LOSS_REDUCTIONS[0],
    global_batch: int | None = None,
    lr_rule: str = DEFAULT_RULE,
    steps: int = DEFAULT_STEPS,
    timeout_s: float = DEFAULT_TRIAL_TIMEOUT_S,
    runner: ChildRunner | None = None,
    accumulation: int | None = None,
) -> dict[str, Any]:
    """Run the one-device and N-replica children and return the JSON report (``passed`` inside).

    ``runner`` runs them (default: :func:`~tuner.driver.children.child_runner`'s choice).
    ``accumulation`` K: instead, K accumulated micro-steps of ``global_batch`` against true
    steps at K × it, on ``plan`` (:mod:`tuner.driver.validate.accumulation`)."""
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
            result=_result,
        )
    batch = global_batch or spec.search.base_batch_size
    _check_options(spec, plan, loss_reduction, batch)
    runner = runner if runner is not None else child_runner()
    lr = scaled_learning_rate(lr_rule, spec.search.base_lr, batch, spec.search.base_batch_size)
    pair = _Pair(spec, plan, runner, timeout_s, batch, lr)
    with tempfile.TemporaryDirectory(prefix="tuner-validate-") as folder:
        single, multi = pair.run_both(Path(folder), steps, loss_reduction)
        checks = pair.checks(Path(folder), single, multi)
    return _report(spec, plan, checks, multi, loss_reduction, batch, lr, lr_rule)


@dataclass
class _Pair:
    """The one-device and the N-replica run of one validation at global batch ``batch`` and
    learning rate ``lr``, and what comparing them needs (the requests, the weight files)."""

    spec: StudySpec
    plan: DevicePlan
    runner: ChildRunner
    timeout_s: float
    batch: int
    lr: float
    requests: list[Any] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)

    def run_both(
        self, folder: Path, steps: int, loss_reduction: str
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Run one device, then the N replicas; their results (single, multi)."""
        results = []
        for run_plan in (self.plan.single_device(), self.plan):
            self.files.append(folder / f"weights-{run_plan.num_replicas}.npz")
            request = replace(
                validate_request(
                    self.spec, run_plan, self.batch, self.lr, steps=steps,
                    loss_reduction=loss_reduction,
                ),
                weights_file=str(self.files[-1]),
            )  # fmt: skip
            self.requests.append(request)
            run = self.runner.run(request, run_plan.child_environment(), self.timeout_s)
            results.append(_result(run, run_plan))
        return results[0], results[1]

    def checks(self, folder: Path, single: dict[str, Any], multi: dict[str, Any]) -> list[Check]:
        """The checks of the two runs, judged again against the control run when loss parity
        or the final weights miss their fixed tolerance."""
        from tuner.driver.validate import weights  # numpy: not on the way of `tuner --help`

        names, count = list(multi.get("variable_names", [])), multi.get("model_variables")
        one, many = self.files
        compared = weights.compare_files(one, many, names, count)
        checks = self._evaluate(single, multi, compared, None)
        if not any(c.name in CONTROLLED and not c.passed for c in checks):
            return checks
        again = folder / "weights-control.npz"
        request = replace(self.requests[0], weights_file=str(again))  # the one-device run's
        control = _control(self.runner, request, self.plan.single_device(), self.timeout_s, single)
        control["weights"] = weights.compare_files(one, again, names, count)
        return self._evaluate(single, multi, compared, control)

    def _evaluate(
        self,
        single: dict[str, Any],
        multi: dict[str, Any],
        compared: dict[str, Any],
        control: dict[str, Any] | None,
    ) -> list[Check]:
        return evaluate(
            single,
            multi,
            global_batch=self.batch,
            learning_rate=self.lr,
            weights=compared,
            control=control,
        )


def _control(
    runner: ChildRunner,
    request: Any,
    single_plan: DevicePlan,
    timeout_s: float,
    single: dict[str, Any],
) -> dict[str, Any]:
    """The control run: one device again, each batch's examples reversed — the same training in
    another float32 rounding order. How far it lands from the first one-device run is how far
    rounding order alone moves this model (:data:`~tuner.driver.validate.checks.CONTROL_FACTOR`).
    Run only when loss parity or the final weights fail their fixed tolerance."""
    env = {**single_plan.child_environment(), REORDER_ENV: "1"}
    result = _result(runner.run(request, env, timeout_s), single_plan)
    return {"loss_relative_difference": loss_difference(single, result)}


def _report(
    spec: StudySpec,
    plan: DevicePlan,
    checks: list[Check],
    multi: dict[str, Any],
    loss_reduction: str,
    batch: int,
    lr: float,
    lr_rule: str,
) -> dict[str, Any]:
    """The JSON report: the run's settings, each check, the warnings, what was made
    deterministic."""
    return {
        "passed": all(c.passed for c in checks),
        "backend": spec.workload.backend,
        "loop": spec.search.loop,
        "update_on": spec.search.update_on,
        "loss_reduction": loss_reduction,
        "global_batch_size": batch,
        "num_replicas": plan.num_replicas,
        "per_replica_batch_size": batch // plan.num_replicas,
        "learning_rate": lr,
        "lr_rule": lr_rule,
        "device_signature": plan.device_signature,
        "steps": multi["steps"],
        "checks": {
            c.name.replace(" ", "_"): {
                "passed": c.passed,
                "summary": c.summary,
                **({"warning": c.warning} if c.warning else {}),
                **c.figures,
            }
            for c in checks
        },
        "warnings": list(dict.fromkeys(c.warning for c in checks if c.warning)),
        "deterministic_layers": list(multi.get("deterministic_layers", [])),
        "versions": multi.get("versions", {}),
        "created_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }


def reduces_its_own_loss(spec: StudySpec) -> bool:
    """Whether the child reduces the loss over replicas itself, so that ``--loss-reduction
    replica-mean`` can plant the wrong reduction: TensorFlow's custom loops, and every run under
    JAX (fit, with the loss the child wraps). TensorFlow's fit reduces in Keras, out of reach."""
    return spec.workload.backend == "jax" or spec.search.loop_kind != "fit"


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


def _result(run: ChildRun, plan: DevicePlan) -> dict[str, Any]:
    return ok_payload(
        run,
        memory_capped=plan.memory_limit_bytes is not None,
        failed=f"the {plan.num_replicas}-device validation run failed",
    )
