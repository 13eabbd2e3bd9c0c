"""Learning-rate scaling rules: pure functions of the base LR and the batch ratio.

When the global batch grows by a factor ``k = global_batch / base_batch``, the rules are

* ``none``   — keep the base learning rate;
* ``linear`` — multiply it by ``k`` (Goyal et al., 2017);
* ``sqrt``   — multiply it by ``sqrt(k)`` (Krizhevsky, 2014; Hoffer et al., 2017).

Which one wins is measured by the study, never assumed here.
"""

from __future__ import annotations

import math
from collections.abc import Callable

_RULES: dict[str, Callable[[float], float]] = {
    "none": lambda k: 1.0,
    "linear": lambda k: k,
    "sqrt": math.sqrt,
}

LR_RULES: tuple[str, ...] = tuple(_RULES)
"""The names of the known rules, in their canonical order."""


def batch_ratio(global_batch_size: int, base_batch_size: int) -> float:
    """Return ``k``: how many times the global batch is larger than the base batch."""
    if global_batch_size <= 0 or base_batch_size <= 0:
        raise ValueError("batch sizes must be positive")
    return global_batch_size / base_batch_size


def scaled_learning_rate(
    rule: str, base_lr: float, global_batch_size: int, base_batch_size: int
) -> float:
    """Return the learning rate that ``rule`` gives at ``global_batch_size``.

    Raises ``ValueError`` for an unknown rule.
    """
    try:
        factor = _RULES[rule]
    except KeyError:
        raise ValueError(
            f"unknown learning-rate rule {rule!r}; known rules: {', '.join(LR_RULES)}"
        ) from None
    return base_lr * factor(batch_ratio(global_batch_size, base_batch_size))
