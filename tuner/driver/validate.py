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
  between the runs (:mod:`tuner.driver.weights`): the direct evidence that the updates agree;
* **weight sync** — after training, every variable's per-replica copies are identical;
* **device use** — every replica processed exactly G/N examples per step (counted inside each
  replica's own step), plus peak memory and NVML utilisation per GPU where available;
* **learning rate** — the optimizer holds the rule's learning rate.

``evaluate`` is pure; ``run_validation`` runs the children.
"""

from __future__ import annotations

import datetime as _dt
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tuner.core.devices import DevicePlan
from tuner.core.errors import ConfigError, TunerError, WorkloadError
from tuner.core.outcome import ChildRun, classify, read_result
from tuner.core.protocol import DEFAULT_TRIAL_TIMEOUT_S, Result
from tuner.core.scaling import scaled_learning_rate
from tuner.core.spec import LOSS_REDUCTIONS, StudySpec
from tuner.driver.children import ChildRunner, child_runner, validate_request

LOSS_RTOL = 1e-5
"""Relative tolerance of loss parity. float32 has a 2^-24 ≈ 6e-8 unit roundoff; a mean over b
examples summed in another order differs by at most ~b·6e-8 in the worst case and ~√b·6e-8
typically (≈ 7e-7 for b = 128), and the difference grows slowly through the updates. Measured here
over 100 steps: ≤ 3e-7 (docs/guide/validate.md). 1e-5 leaves room for that and still fails any
real bug — a loss summed instead of averaged over replicas is off by 100 %."""

WEIGHTS_RTOL = 0.1
"""Tolerance of the final-weights comparison: the relative difference of the model's variables
together, and of the optimizer's, against how far they moved (:mod:`tuner.driver.weights`).
Measured on 2 CPU replicas, float32: the built-in MLP 7e-7 (fit) to 1.2e-6 (custom loops) after
48 steps; the MNIST convnet 8e-7 after 20 steps — rounding order alone — but 4e-3 (weights) and
1.6e-2 (Adam's moments) after 32 and 1e-1 after 48: training amplifies it (a max-pool or ReLU
that flips on a near tie, Adam dividing a near-zero gradient by its own size), and a bias
followed by BatchNormalization, whose true gradient is 0, moves by rounding noise alone (3.7e-2
after 20 steps). An update that is wrong is off by its own size from the first step: a loss
scaled by the replicas (the forum answer's replica-mean) leaves Adam's moments 0.5 and 0.75
apart. 0.1 sits between; above :data:`WEIGHTS_DRIFT` the check passes with a warning."""

WEIGHTS_DRIFT = 1e-3
"""Above this the final weights differ by more than rounding order alone gives over 20 steps
(≤ 1.2e-6 measured): a pass, with a warning that training amplified it."""

LR_RTOL = 1e-6
"""float32 holds the learning rate: 1e-6 relative is well above its rounding (6e-8)."""

DEFAULT_STEPS = 20
"""Steps per run: the differences that float32 rounding order leaves grow with every step (see
:data:`WEIGHTS_RTOL`); over 20 they stay at rounding level on a convnet, and a wrong update is
off by its own size from the first."""
DEFAULT_RULE = "none"
"""Validation compares runs at one global batch, so by default the learning rate is not scaled."""


@dataclass(frozen=True)
class Check:
    """One check's verdict, the figures behind it, and a warning that does not fail it."""

    name: str
    passed: bool
    summary: str
    figures: dict[str, Any]
    warning: str | None = None


def evaluate(
    single: dict[str, Any],
    multi: dict[str, Any],
    *,
    global_batch: int,
    learning_rate: float,
    weights: dict[str, Any] | None = None,
) -> list[Check]:
    """Compare a one-device run with an N-replica run (child results) and return the checks;
    ``weights`` is :func:`tuner.driver.weights.compare`'s figures (no final-weights check
    without them).

    Loss parity and final weights need both runs to see the same global batches in the same
    order. A dataset function shards by its ``input_context`` as it likes, so for it neither is
    claimed: the checks say so and the others stand. Where the runs' batch digests differ (a
    pipeline whose randomness the seed does not reach), neither is judged either: both are
    inconclusive with the warning :data:`OTHER_DATA`, never a failure."""
    comparable = multi.get("input_form") != "function"
    differ = first_differing_batch(single, multi)
    final = None
    if weights is not None:
        final = _final_weights(weights, int(multi["steps"]))
        if not comparable:
            final = _not_comparable("final weights")
        elif differ is not None:
            final = _other_data("final weights", differ)
    agree = final is not None and final.passed and comparable
    parity = _loss_parity(
        single["step_losses"], multi["step_losses"], int(multi["num_replicas"]), agree
    )
    if not comparable:
        parity = _not_comparable("loss parity")
    elif differ is not None:
        parity = _other_data("loss parity", differ)
    return [
        parity,
        *([final] if final is not None else []),
        _weight_sync(multi),
        _device_use(multi, global_batch),
        _learning_rate(multi["optimizer_learning_rate"], learning_rate),
    ]


def _loss_parity(one: list[float], many: list[float], replicas: int, weights_agree: bool) -> Check:
    """Every step's loss within :data:`LOSS_RTOL`; or, when the final weights agree, within it
    after one constant factor — the logged loss is scaled, the training is not."""
    steps = min(len(one), len(many))
    worst = _worst_relative(one[:steps], many[:steps])
    ratio = _median_ratio(many[:steps], one[:steps])
    passed = steps > 0 and len(one) == len(many) and worst <= LOSS_RTOL
    shown = ratio if ratio is not None else float("nan")
    warning = None
    summary = (
        f"max relative difference {worst:.2e} over {steps} steps (tolerance {LOSS_RTOL:.0e}); "
        f"median loss ratio replicas/one device {shown:.4f}"
    )
    if not passed and weights_agree and ratio and steps > 0 and len(one) == len(many):
        rescaled = _worst_relative(one[:steps], [value / ratio for value in many[:steps]])
        if rescaled <= LOSS_RTOL:
            passed, warning = True, _scaled_logging(ratio, replicas)
            summary += f"; {rescaled:.2e} once divided by that constant ratio"
    return Check(
        "loss parity",
        passed,
        summary,
        {
            "max_relative_difference": worst,
            "median_loss_ratio": ratio,
            "tolerance": LOSS_RTOL,
            "steps_compared": steps,
            "single_device_losses": one,
            "replica_losses": many,
        },
        warning,
    )


def _worst_relative(one: list[float], many: list[float]) -> float:
    worst = 0.0
    for a, b in zip(one, many, strict=True):
        scale = max(abs(a), abs(b), 1e-12)
        worst = max(worst, abs(a - b) / scale) if a == a and b == b else float("inf")
    return worst


def _scaled_logging(ratio: float, replicas: int) -> str:
    """The warning for a logged loss that is ``ratio`` times the one-device loss."""
    if abs(ratio * replicas - 1.0) <= LOSS_RTOL * replicas:
        return (
            f"the loss your train_step logs is scaled by 1/{replicas} under the "
            f"{replicas}-replica strategy (Keras's compute_loss inside a replica context "
            "divides by the number of replicas, so that summed gradients come out right); "
            "the updates agree: the final weights match one device"
        )
    return (
        f"the loss your train_step logs is {ratio:.4g} times the one-device loss at every step; "
        "the updates agree: the final weights match one device"
    )


def _final_weights(figures: dict[str, Any], steps: int) -> Check:
    """Every variable after the N steps, one device against the replicas."""
    figures = {**figures, "tolerance": WEIGHTS_RTOL}
    if not figures.get("compared"):
        return Check("final weights", False, f"not compared: {figures['reason']}", figures)
    worst = float(figures["max_relative_difference"])
    count = int(figures["variables_compared"])
    summary = (
        f"relative difference after {steps} steps: weights "
        f"{figures['model_relative_difference']:.1e}, optimizer state "
        f"{figures['optimizer_relative_difference']:.1e} ({count} variables; tolerance "
        f"{WEIGHTS_RTOL:.0e} of how far they moved)"
    )
    if figures["largest"] and figures["largest"][0][1] > 0:
        name, value = figures["largest"][0]
        summary += f"; largest {name} {value:.1e}"
    warning = None
    if WEIGHTS_DRIFT < worst <= WEIGHTS_RTOL:
        warning = (
            f"the final weights differ by {worst:.1e} of how far they moved: more than float32 "
            "rounding order leaves over 20 steps, far less than a wrong update (0.5); training "
            "amplifies rounding (near ties in ReLU or max-pooling, Adam on near-zero gradients, "
            "a bias before BatchNormalization): fewer --steps show it smaller"
        )
    return Check("final weights", count > 0 and worst <= WEIGHTS_RTOL, summary, figures, warning)


def _not_comparable(name: str) -> Check:
    return Check(
        name,
        True,
        "not compared: a dataset function shards its input by input_context, so the one-device "
        "and the replica runs need not see the same global batches; weight sync, device use and "
        "the learning rate are checked",
        {"compared": False, "reason": "dataset function"},
    )


def first_differing_batch(single: dict[str, Any], multi: dict[str, Any]) -> int | None:
    """The first batch (from 0) the two runs trained on that differs, by the digests each run
    took of its batches; ``None`` when they agree or a run could not take them."""
    one, many = single.get("batch_digests"), multi.get("batch_digests")
    if not one or not many:
        return None
    for index, (a, b) in enumerate(zip(one, many, strict=False)):
        if a != b:
            return index
    return None if len(one) == len(many) else min(len(one), len(many))


OTHER_DATA = (
    "the two runs saw different data (your pipeline's order is not seeded): the comparison is "
    "not meaningful; seed the shuffle"
)
"""The warning when the runs' batches differ: the workload's pipeline draws randomness that the
run's seed does not reach (a dataset function, a generator with its own RNG, tf.data under JAX)."""


def _other_data(name: str, batch: int) -> Check:
    """Inconclusive, not failed: the runs trained on other batches, so losses and weights
    differ whatever the distribution does."""
    return Check(
        name,
        True,
        f"not compared: the two runs saw different data from batch {batch + 1} on",
        {"compared": False, "reason": "different data", "first_differing_batch": batch + 1},
        f"{OTHER_DATA} (e.g. shuffle(..., seed=0), a seeded generator); the batches first "
        f"differ at batch {batch + 1}",
    )


def _median_ratio(numerators: list[float], denominators: list[float]) -> float | None:
    ratios = sorted(a / b for a, b in zip(numerators, denominators, strict=True) if b)
    return ratios[len(ratios) // 2] if ratios else None


def _weight_sync(multi: dict[str, Any]) -> Check:
    diff = float(multi["weight_max_abs_diff"])
    copies = int(multi["copies_per_variable"])
    where = ", ".join(multi.get("variable_devices", []))
    if copies <= 1:
        summary = f"one copy of each variable (on {where}): nothing can drift"
    else:
        summary = f"max abs difference {diff:.1e} between {copies} copies of each variable"
    return Check(
        "weight sync",
        diff == 0.0,
        summary,
        {
            "max_abs_difference": diff,
            "variables_compared": multi["variables_compared"],
            "copies_per_variable": copies,
            "variable_devices": multi.get("variable_devices", []),
        },
    )


def _device_use(multi: dict[str, Any], global_batch: int) -> Check:
    examples = [int(n) for n in multi["replica_examples"]]
    replicas = int(multi["num_replicas"])
    expected = int(multi["steps"]) * global_batch // replicas
    passed = len(examples) == replicas and all(n == expected for n in examples) and expected > 0
    peaks = multi.get("peak_memory_per_device") or []
    utilization = multi.get("utilization_per_device")
    if utilization:
        passed = passed and all(u > 0 for u in utilization)
    summary = f"examples per replica {examples} (expected {expected} each: G/N per step)"
    if any(p is not None for p in peaks):
        summary += f"; peak memory {[_mib(p) for p in peaks]}"
    if utilization:
        summary += f"; mean utilisation {[f'{u:.0f}%' for u in utilization]}"
    return Check(
        "device use",
        passed,
        summary,
        {
            "devices": multi["devices"],
            "replica_examples": examples,
            "expected_per_replica": expected,
            "peak_memory_per_device": peaks,
            "utilization_per_device": utilization,
        },
    )


def _learning_rate(actual: float, expected: float) -> Check:
    passed = abs(actual - expected) <= LR_RTOL * abs(expected)
    return Check(
        "learning rate",
        passed,
        f"optimizer holds {actual:.6g}, the rule gives {expected:.6g}",
        {"expected": expected, "actual": actual},
    )


def _mib(value: int | None) -> str:
    return "n/a" if value is None else f"{value / 2**20:.0f} MiB"


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
) -> dict[str, Any]:
    """Run the one-device and N-replica children and return the JSON report (``passed`` inside).

    ``runner`` runs them (default: :func:`~tuner.driver.children.child_runner`'s choice)."""
    batch = global_batch or spec.search.base_batch_size
    _check_options(spec, plan, loss_reduction, batch)
    runner = runner if runner is not None else child_runner()
    lr = scaled_learning_rate(lr_rule, spec.search.base_lr, batch, spec.search.base_batch_size)
    with tempfile.TemporaryDirectory(prefix="tuner-validate-") as folder:
        results, files = [], []
        for run_plan in (plan.single_device(), plan):
            files.append(Path(folder) / f"weights-{run_plan.num_replicas}.npz")
            request = replace(
                validate_request(
                    spec, run_plan, batch, lr, steps=steps, loss_reduction=loss_reduction
                ),
                weights_file=str(files[-1]),
            )
            run = runner.run(request, run_plan.child_environment(), timeout_s)
            results.append(_result(run, run_plan))
        single, multi = results
        from tuner.driver import weights  # numpy: not on the way of `tuner --help`

        names = list(multi.get("variable_names", []))
        one, many = files
        compared = weights.compare_files(one, many, names, multi.get("model_variables"))
    checks = evaluate(single, multi, global_batch=batch, learning_rate=lr, weights=compared)
    return _report(spec, plan, checks, multi, loss_reduction, batch, lr, lr_rule)


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
    read = read_result(run.result_text)
    if isinstance(read, Result) and read.status == "ok":
        return dict(read.payload)
    if isinstance(read, Result) and read.status == "invalid":
        raise WorkloadError(str(read.error))
    outcome = classify(run, memory_capped=plan.memory_limit_bytes is not None)
    raise TunerError(
        f"the {plan.num_replicas}-device validation run failed ({outcome.status}): {outcome.error}"
    )
