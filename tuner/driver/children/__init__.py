"""Child processes, from the driver's side: how a request becomes a finished child (its modules:
docs/design/architecture.md, ``driver/children/``)."""

from __future__ import annotations

from tuner.driver.children._instant import InstantRunner, is_enabled
from tuner.driver.children._requests import (
    ChildRunner,
    OnEvent,
    budget_dict,
    first_precision,
    inspect_request,
    probe_request,
    target_of,
    trial_request,
    validate_request,
    workload_ref,
)
from tuner.driver.children._runner import ProcessRunner, cancel_event, ending_on
from tuner.driver.children._trial_dirs import owned_folder
from tuner.driver.children._warm import last_run, spares

__all__ = [
    "ChildRunner",
    "OnEvent",
    "budget_dict",
    "cancel_event",
    "child_runner",
    "ending_on",
    "first_precision",
    "inspect_request",
    "last_run",
    "owned_folder",
    "probe_request",
    "spares",
    "target_of",
    "trial_request",
    "validate_request",
    "workload_ref",
]


def child_runner() -> ChildRunner:
    """The one place that chooses what runs the driver's children: the process runner, or the
    instant stand-in when ``TUNER_TEST_INSTANT_TRIALS=1`` (``_instant``)."""
    return InstantRunner() if is_enabled() else ProcessRunner()
