"""``tuner validate --accumulation``'s verdict, with the model families whose difference is
Keras's own (BatchNormalization; Embedding under TensorFlow), and the control run."""

from __future__ import annotations

from typing import Any

from tuner.driver.validate.checks import Check, judged

ACCUMULATION_RTOL = 1e-5
"""Tolerance of ``tuner validate --accumulation``: the model's weights after K accumulated
micro-steps against one true step at K × the batch, relative to how far they moved. The mean of
K micro-batch means is the mean over the batch up to float32 rounding order (~1e-7 per step)."""


def accumulation_check(
    figures: dict[str, Any],
    batch_norm: list[str],
    sparse: list[str] | None = None,
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
"""Why a TensorFlow model with Embedding layers is not held to the accumulation tolerance.
Measured (Keras 3.15.1, TF 2.21, the functional-API guide's multi-input model, one device,
plain Keras, 4 steps at 128 vs 8 accumulated micro-steps of 64): Embedding weights 0.22 (RMSprop)
and 0.47 (Adam) apart relative to how far they moved, SGD 5.9e-5; the two half-batch gradients'
mean equals the batch's to 1e-7."""
