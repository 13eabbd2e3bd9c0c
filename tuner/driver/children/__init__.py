"""Child processes, from the driver's side: how a request becomes a finished child.

``_requests`` (what a child is asked to run, and :class:`ChildRunner`, what the driver's steps are
handed to run it), ``_runner`` (the process runner: one request in a fresh child process or the
warm one, under a watchdog), ``_process`` (a child as a process: its command under the
supervisor, its environment, folder and process group), ``_spares`` (the warm spare's start and
hand-over), ``_warm`` (the spares' pool), ``_trial_dirs`` (each child's folder and who owns it,
and the owned temp folders of ``tuner validate``) and ``_instant`` (the stand-in runner that
answers at once, for benchmarks of the driver).
"""

from __future__ import annotations

from tuner.driver.children._instant import InstantRunner, is_enabled
from tuner.driver.children._requests import (
    ChildRunner,
    OnEvent,
    budget_dict,
    first_precision,
    inspect_request,
    probe_request,
    trial_request,
    validate_request,
    workload_ref,
)
from tuner.driver.children._runner import ProcessRunner
from tuner.driver.children._trial_dirs import owned_folder
from tuner.driver.children._warm import last_run, spares

__all__ = [
    "ChildRunner",
    "OnEvent",
    "budget_dict",
    "child_runner",
    "first_precision",
    "inspect_request",
    "last_run",
    "owned_folder",
    "probe_request",
    "spares",
    "trial_request",
    "validate_request",
    "workload_ref",
]


def child_runner() -> ChildRunner:
    """The one place that chooses what runs the driver's children, called by its entries and by
    benchmarks that run one request: the process runner, or the instant stand-in when
    ``TUNER_TEST_INSTANT_TRIALS=1`` (a test aid for benchmarks of the driver: ``_instant``)."""
    return InstantRunner() if is_enabled() else ProcessRunner()
