"""The checks of ``tuner validate``, pure: one device's result against N replicas'."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

LOSS_RTOL = 1e-5
"""Relative tolerance of loss parity: float32 reduction order moves a mean over b examples by
~√b·6e-8 (≤ 3e-7 measured over 100 steps); a loss summed instead of averaged over replicas is
off by 100 % (docs/guide/validate.md)."""

WEIGHTS_RTOL = 0.1
"""Tolerance of the final weights: the relative difference of the model's variables together,
and of the optimizer's, against how far they moved (:mod:`tuner.driver.validate.weights`). It
sits between rounding order as training amplifies it (up to 1e-1 after 48 steps of the MNIST
convnet) and a wrong update, off by its own size (0.5); measurements: docs/guide/validate.md."""

WEIGHTS_DRIFT = 1e-3
"""Above this (rounding order alone: ≤ 1.2e-6 over 20 steps) a pass warns that training
amplified the difference."""

CONTROL_FACTOR = 3.0
"""Loss parity or final weights that fail their tolerance pass, with a warning, when the replicas
differ from one device by at most this many times what the control run does (one device, each
batch's examples reversed: another float32 rounding order, as a right N-replica run is): rounding
alone moves a deep BatchNorm network far within a few steps (docs/guide/validate.md). 3 leaves
room for two rounding drifts of one size landing unequally far."""

REORDER_ENV = "TUNER_VALIDATE_REORDER"
"""Asks a validation child to replay each batch's examples reversed: the control run."""

CONTROLLED = ("loss parity", "final weights")
"""The checks the control run can excuse: the two that compare numbers float32 rounds."""

LR_RTOL = 1e-6
"""float32 holds the learning rate: 1e-6 relative is well above its rounding (6e-8)."""


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
    control: dict[str, Any] | None = None,
) -> list[Check]:
    """Compare a one-device run with an N-replica run: the checks (no final weights without
    ``weights``; ``control``: :data:`CONTROL_FACTOR`). Loss parity and final weights need the
    same batches in both runs: for a dataset function (which shards as it likes), or where the
    batch digests differ (:data:`OTHER_DATA`), they are inconclusive, never a failure."""
    comparable = multi.get("input_form") != "function"
    differ = first_differing_batch(single, multi)

    def on_same_data(check: Check) -> Check:
        if not comparable:
            return _not_comparable(check.name)
        return _controlled(check, control) if differ is None else _other_data(check.name, differ)

    final = None if weights is None else on_same_data(_final_weights(weights, int(multi["steps"])))
    agree = final is not None and final.passed and comparable
    losses = single["step_losses"], multi["step_losses"]
    parity = on_same_data(_loss_parity(*losses, int(multi["num_replicas"]), agree))
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
    ratios = [b / a for a, b in zip(one[:steps], many[:steps], strict=True) if a]
    ratio = statistics.median_high(ratios) if ratios else None
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


def loss_difference(single: dict[str, Any], other: dict[str, Any]) -> float:
    """The largest relative difference between two runs' per-step losses."""
    one, two = single["step_losses"], other["step_losses"]
    steps = min(len(one), len(two))
    return _worst_relative(one[:steps], two[:steps]) if steps else float("inf")


def _controlled(check: Check, control: dict[str, Any] | None) -> Check:
    """``check``, or passed with a warning within :data:`CONTROL_FACTOR` times the control's."""
    if check.passed or control is None or not check.figures.get("compared", True):
        return check
    if check.name == "loss parity":
        apart, floor = check.figures["max_relative_difference"], control["loss_relative_difference"]
    else:
        weights = control.get("weights") or {}
        if not weights.get("compared"):
            return check
        apart, floor = check.figures["max_relative_difference"], weights["max_relative_difference"]
    warning = (
        f"{check.name}: the replicas differ from one device by {apart:.1e}, and one device "
        f"from itself with each batch's examples reversed by {floor:.1e}: float32 rounding "
        "order alone moves this model's training that far (a deep BatchNorm network: Adam's "
        "first steps turn gradients below float32's error into ±lr), so a wrong update smaller "
        "than that cannot be told from it; fewer --steps compare more strictly"
    )
    return judged(check, apart, floor, "one device, batches reversed", warning)


def judged(check: Check, apart: float, floor: float, control: str, warning: str) -> Check:
    """``check`` failed at its fixed tolerance, judged again against the control's ``floor``:
    passed with ``warning`` within :data:`CONTROL_FACTOR` times it, else failed. A figure that
    is not finite is never excused: ``inf <= 3 * inf`` would pass anything."""
    figures = {**check.figures, "control_relative_difference": floor}
    summary = f"{check.summary}; control run ({control}) {floor:.1e}"
    if not (math.isfinite(apart) and math.isfinite(floor) and apart <= CONTROL_FACTOR * floor):
        return Check(check.name, False, summary, figures, check.warning)
    return Check(check.name, True, summary, figures, warning)


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
    """Inconclusive, not failed: the runs trained on other batches."""
    return Check(
        name,
        True,
        f"not compared: the two runs saw different data from batch {batch + 1} on",
        {"compared": False, "reason": "different data", "first_differing_batch": batch + 1},
        f"{OTHER_DATA} (e.g. shuffle(..., seed=0), a seeded generator); the batches first "
        f"differ at batch {batch + 1}",
    )


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
    summary = f"examples per replica {examples} (expected {expected} each: G/N per step)"
    if any(p is not None for p in peaks):
        shown = ["n/a" if p is None else f"{p / 2**20:.0f} MiB" for p in peaks]
        summary += f"; peak memory {shown}"
    if utilization:
        passed = passed and all(u > 0 for u in utilization)
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
