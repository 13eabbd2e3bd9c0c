"""Inside the child: ``add_loss`` terms that Keras scales by ``1 / replicas`` twice
(``docs/guide/own-model.md``; measured, Keras 3.15: 0.354 on 2 replicas for 0.707).

Under ``MirroredStrategy`` a loss object called as ``loss_fn(y, y_pred)`` scales its mean by
``1 / replicas`` itself, and the trainer (``_aggregate_additional_loss``) scales it again. Each
term is read inside a replica's step and outside the strategy: one ``1 / replicas`` smaller
inside was scaled by its loss object. When every non-zero term is such a term, the aggregation
is multiplied by ``replicas``; a mix of both kinds cannot be corrected term by term: it is said.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import tensorflow as tf

from tuner.worker.losses import call_model, unpack

_REL = 1e-4  # float32 sums of the same numbers in another order


def term_kinds(inside: list[float], outside: list[float], replicas: int) -> list[str]:
    """Per ``add_loss`` term: ``scaled`` (``1 / replicas`` smaller under the strategy),
    ``plain`` (the same), ``zero`` (nothing to tell by) or ``unknown``."""
    kinds = []
    for a, b in zip(inside, outside, strict=True):
        if b == 0 or not (math.isfinite(a) and math.isfinite(b)):
            kinds.append("zero")
        elif math.isclose(a * replicas, b, rel_tol=_REL):
            kinds.append("scaled")
        elif math.isclose(a, b, rel_tol=_REL):
            kinds.append("plain")
        else:
            kinds.append("unknown")
    return kinds


def decide(kinds: list[str], replicas: int) -> tuple[bool, str | None]:
    """(whether to multiply the additional losses by ``replicas``, the note to store)."""
    if "scaled" not in kinds:
        return False, None
    if all(kind in ("scaled", "zero") for kind in kinds):
        return True, (
            f"add_loss() from a Keras loss object: Keras scales it by 1/{replicas} twice on "
            f"{replicas} replicas; multiplied by {replicas}, so loss and gradients are one "
            "device's"
        )
    scaled = kinds.count("scaled")
    return False, (
        f"{scaled} of {len(kinds)} additional loss terms (add_loss(), regularizers) come from a "
        "Keras loss object, which Keras "
        f"scales by 1/{replicas} twice on {replicas} replicas (its loss and gradients "
        f"1/{replicas} of one device's); mixed with other terms, not corrected"
    )


def _term_values(model: Any, x: Any) -> list[float]:
    call_model(model, x, training=False)
    return [float(np.asarray(term)) for term in model.losses]


def _replica_term_values(model: Any, strategy: Any, x: Any) -> list[float]:
    """The terms as one replica's step computes them (every replica given the same ``x``): in
    a replica context, where a layer may also update its own metrics, as in training."""

    @tf.function
    def read() -> Any:
        def replica() -> list[Any]:
            call_model(model, x, training=False)
            return list(model.losses)

        return strategy.run(replica)

    return [float(np.asarray(strategy.experimental_local_results(t)[0])) for t in read()]


def correct_additional_losses(model: Any, strategy: Any, batch: Any) -> str | None:
    """Read the model's ``add_loss`` terms on ``batch`` (a local batch) and, where each one is
    scaled twice, multiply the model's aggregation by ``replicas``; the note to store, if any.
    A model not yet built is left alone (building it here would place its variables)."""
    replicas = int(strategy.num_replicas_in_sync)
    if replicas < 2 or not hasattr(model, "_aggregate_additional_loss"):
        return None
    if not model.built or not all(layer.built for layer in model._flatten_layers()):
        return None
    x, _, _ = unpack(batch)
    try:
        inside = _replica_term_values(model, strategy, x)
        outside = _term_values(model, x)
    except Exception:  # a check that cannot call the model leaves it as it is
        return None
    if not inside or len(inside) != len(outside):
        return None
    rescale, note = decide(term_kinds(inside, outside, replicas), replicas)
    if rescale:
        aggregate = model._aggregate_additional_loss
        factor = float(replicas)
        model._aggregate_additional_loss = lambda loss: aggregate(loss) * factor
    return note
