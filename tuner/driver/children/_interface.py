"""What the driver needs from whatever runs its children: one request in, one finished run out.

The driver's steps (the workload check, the probe, the baseline, the trials, the seed runs,
``tuner validate``) receive a :class:`ChildRunner` from the one place that chooses it
(:func:`tuner.driver.children.child_runner`, called by the driver's entries) instead of
importing a function, so the process runner, the instant stand-in and a test's fake are
interchangeable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from tuner.core.outcome import ChildRun
from tuner.core.protocol import Event, Request

OnEvent = Callable[[Event], None]
"""Called with each event the child reports while it runs, in order."""


class ChildRunner(Protocol):
    """Runs one request to its end and says what it left behind."""

    def run(
        self,
        request: Request,
        env: dict[str, str],
        timeout_s: float,
        on_event: OnEvent | None = None,
    ) -> ChildRun:
        """Run ``request`` with ``env`` added to the child's environment, for at most
        ``timeout_s`` seconds, passing its events to ``on_event``; return the finished run
        (a run that timed out says so, it does not raise)."""
        ...
