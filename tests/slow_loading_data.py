"""A workload whose data take longer to load than any test waits: the workload check must be
killed at the search's ``--trial-timeout``."""

from __future__ import annotations

import time
from typing import Any


def load_data() -> Any:
    """Never returns within a test's time."""
    time.sleep(3600)
    raise AssertionError("the workload check should have been killed long before")
