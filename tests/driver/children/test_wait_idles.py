"""The runner's wait for its child: once the next warm child's order has been started, it waits
without spinning (a loop that watched nothing took a core from the trial it timed)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

from tuner.driver.children import _runner as runner


class _Order:
    """A spare order wanted at once, whose start is only counted."""

    def __init__(self) -> None:
        self.wanted = threading.Event()
        self.wanted.set()
        self.started = 0

    def start(self) -> None:
        self.started += 1


def test_after_starting_the_spare_the_wait_uses_no_cpu() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(1.5)"],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    order = _Order()
    cpu, wall = time.thread_time(), time.monotonic()
    timed_out = runner._wait(proc, 30.0, None, order)  # type: ignore[arg-type]
    assert not timed_out and order.started == 1 and proc.returncode == 0
    assert time.monotonic() - wall >= 1.0
    # Waiting 1.5 s of the child's sleep in a loop would cost this thread about as much CPU.
    assert time.thread_time() - cpu < 0.3
