"""How a recommendation is chosen: the policies and the loss tolerance (kept light, so the CLI's
help can show them without importing Optuna)."""

from __future__ import annotations

DEFAULT_TOLERANCE = 0.02
"""A configuration whose final loss is within this relative margin of the best counts as as good
(raised to twice the measured seed-to-seed spread when that is larger)."""
POLICY = "loss-then-throughput"
"""The policy without a target loss: the fastest of the configurations within the tolerance of
the best loss."""
GOODPUT = "goodput"
"""Among the same candidates, the highest goodput (throughput × statistical efficiency)."""
TIME_TO_TARGET = "time-to-target"
"""Among the configurations that reached the target loss, the shortest training time to it."""
POLICIES = (POLICY, GOODPUT, TIME_TO_TARGET)


def default_policy(target_loss: float | None) -> str:
    """``time-to-target`` when a target loss is given (the question a target asks), else
    ``loss-then-throughput``."""
    return POLICY if target_loss is None else TIME_TO_TARGET


DEFAULT_TIE_MARGIN = 0.05
"""Candidates whose measured value is within this relative margin of the best one's are equally
good in practice (the throughput ratio of the best over them at most 1.05): the smallest global
batch of them is picked."""
