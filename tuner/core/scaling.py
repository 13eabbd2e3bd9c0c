"""Learning-rate scaling rules: pure functions of the base LR and the batch ratio ``k``
(``none``, ``linear``, ``sqrt``, ``linear-warmup``, ``sqrt-adam``; each rule and its source:
``docs/guide/search.md``, ``statistics.md``). Which wins is measured, never assumed.
``--lr-sweep N`` adds ``sweep-i/N``: N log-spaced rates from half ``none`` to twice ``linear``
(:func:`sweep_rules`), extended past an end by :func:`sweep_extension_rules` (at most
:data:`SWEEP_EXTRA` a side).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

_RULES: dict[str, Callable[[float], float]] = {
    "none": lambda k: 1.0,
    "linear": lambda k: k,
    "sqrt": math.sqrt,
    "linear-warmup": lambda k: k,
    "sqrt-adam": math.sqrt,
}
ADAM_FAMILY = ("adam", "adamw")
"""Optimizers with ``beta_1``/``beta_2``/``epsilon`` that ``sqrt-adam`` can rescale."""
KERAS_ADAM = {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7}
"""Keras's Adam defaults: ``sqrt-adam`` is shown on them where the optimizer's are not at hand."""

LR_RULES: tuple[str, ...] = tuple(_RULES)
"""The names of the known rules, in their canonical order."""


SWEEP_PREFIX = "sweep-"
"""The rules of an LR sweep are named ``sweep-i/N`` (point ``i`` of ``N``, from 1)."""
SWEEP_LOW, SWEEP_HIGH = 0.5, 2.0
"""The sweep spans ``SWEEP_LOW`` × the ``none`` rate to ``SWEEP_HIGH`` × the ``linear`` one."""


SWEEP_EXTRA = 3
"""The most rates an adaptive sweep adds past each end at one batch while the best rate sits
there (:func:`tuner.core.adaptive_sweep.extension`); then the answer says the cap stopped it."""


def sweep_rules(points: int) -> tuple[str, ...]:
    """The rule names of an LR sweep of ``points`` rates (none below 2)."""
    return tuple(f"{SWEEP_PREFIX}{i}/{points}" for i in range(1, points + 1)) if points > 1 else ()


def sweep_extension_rules(points: int) -> tuple[str, ...]:
    """The rules a sweep may add past its ends: :data:`SWEEP_EXTRA` a side, nearest first."""
    if points < 2:
        return ()
    below = (f"{SWEEP_PREFIX}{1 - j}/{points}" for j in range(1, SWEEP_EXTRA + 1))
    above = (f"{SWEEP_PREFIX}{points + j}/{points}" for j in range(1, SWEEP_EXTRA + 1))
    return (*below, *above)


def sweep_index(rule: str) -> tuple[int, int]:
    """``(i, N)`` of ``sweep-i/N`` (``i`` outside 1..N: an extension); else ``ValueError``."""
    try:
        index, _, points = rule[len(SWEEP_PREFIX) :].partition("/")
        i, n = int(index), int(points)
    except ValueError:
        i, n = 0, 0
    if not is_sweep(rule) or n < 2 or not 1 - SWEEP_EXTRA <= i <= n + SWEEP_EXTRA:
        raise ValueError(f"unknown learning-rate rule {rule!r}: a sweep point is sweep-i/N")
    return i, n


def is_sweep(rule: str) -> bool:
    """Whether ``rule`` is a point of an LR sweep rather than a fixed rule."""
    return rule.startswith(SWEEP_PREFIX)


def _sweep_factor(rule: str, k: float) -> float:
    """``SWEEP_LOW × (SWEEP_HIGH / SWEEP_LOW × max(k, 1))^((i - 1) / (N - 1))`` for
    ``sweep-i/N`` at batch ratio ``k`` (an extension goes on with the same log step)."""
    i, n = sweep_index(rule)
    span = SWEEP_HIGH / SWEEP_LOW * max(k, 1.0)
    return SWEEP_LOW * span ** ((i - 1) / (n - 1))


def batch_ratio(global_batch_size: int, base_batch_size: int) -> float:
    """Return ``k``: how many times the global batch is larger than the base batch."""
    if global_batch_size <= 0 or base_batch_size <= 0:
        raise ValueError("batch sizes must be positive")
    return global_batch_size / base_batch_size


def scaled_learning_rate(
    rule: str, base_lr: float, global_batch_size: int, base_batch_size: int
) -> float:
    """The learning rate ``rule`` gives at ``global_batch_size``; ``ValueError``: unknown rule."""
    if not is_sweep(rule) and rule not in _RULES:
        raise ValueError(f"unknown learning-rate rule {rule!r}; known rules: {', '.join(LR_RULES)}")
    k = batch_ratio(global_batch_size, base_batch_size)
    return base_lr * (_sweep_factor(rule, k) if is_sweep(rule) else _RULES[rule](k))


def optimizer_settings(rule: str, k: float, config: dict[str, Any]) -> dict[str, Any]:
    """The optimizer settings ``rule`` changes at batch ratio ``k`` from the optimizer's
    ``config`` (empty: it sets only the rate). ``ValueError`` when ``sqrt-adam`` meets an
    optimizer without Adam's moments, or a ratio that takes a beta out of (0, 1)."""
    if rule != "sqrt-adam":
        return {}
    missing = [key for key in ("beta_1", "beta_2", "epsilon") if key not in config]
    if missing:
        raise ValueError(
            f"the sqrt-adam rule rescales Adam's beta_1, beta_2 and epsilon; this optimizer has "
            f"no {', '.join(missing)} (use it with adam or adamw)"
        )
    settings = {
        "beta_1": 1.0 - k * (1.0 - float(config["beta_1"])),
        "beta_2": 1.0 - k * (1.0 - float(config["beta_2"])),
        "epsilon": float(config["epsilon"]) / math.sqrt(k),
    }
    for key in ("beta_1", "beta_2"):
        if not 0.0 < settings[key] < 1.0:
            raise ValueError(
                f"the sqrt-adam rule at {k:g}x the base batch gives {key} = {settings[key]:.3g}, "
                f"outside (0, 1): the rule holds for small ratios; use smaller batch multipliers"
            )
    return settings
