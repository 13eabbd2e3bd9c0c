"""Child processes, from the driver's side: how a request becomes a finished child.

``_requests`` (what a child is asked to run), ``_runner`` (one request in a fresh child
process, in its own session, under a supervisor and a watchdog), ``_warm`` (the next run's
process, started while the current one finishes), ``_trial_dirs`` (each child's folder and who
owns it) and ``_instant`` (the stand-in that answers at once, for benchmarks of the driver).
"""

from __future__ import annotations

from tuner.driver.children._requests import (
    budget_dict,
    first_precision,
    inspect_request,
    trial_request,
    validate_request,
)
from tuner.driver.children._runner import run_child
from tuner.driver.children._warm import spares

__all__ = [
    "budget_dict",
    "first_precision",
    "inspect_request",
    "run_child",
    "spares",
    "trial_request",
    "validate_request",
]
