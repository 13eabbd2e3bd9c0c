"""How a recommendation is chosen: the policies and the loss tolerance (kept light, so the CLI's
help can show them without importing Optuna)."""

from __future__ import annotations

DEFAULT_TOLERANCE = 0.02
"""A configuration whose final loss is within this relative margin of the best counts as as good."""
POLICY = "loss-then-throughput"
"""The default policy: the fastest of the configurations within the tolerance of the best loss."""
POLICIES = (POLICY, "goodput")
