"""The one place that chooses what runs the driver's children.

Called by the driver's entries (:func:`tuner.driver.study.run_search`,
:func:`tuner.driver.study.probe_study`, :func:`tuner.driver.validate.run.run_validation`) and by
benchmarks that run one request; every step below the entries is handed the runner they chose.
"""

from __future__ import annotations

from tuner.driver.children._instant import InstantRunner, is_enabled
from tuner.driver.children._interface import ChildRunner
from tuner.driver.children._runner import ProcessRunner


def child_runner() -> ChildRunner:
    """The process runner; the instant stand-in instead when ``TUNER_TEST_INSTANT_TRIALS=1``
    (a test aid for benchmarks of the driver: :mod:`tuner.driver.children._instant`)."""
    return InstantRunner() if is_enabled() else ProcessRunner()
