"""The fast tier proves that it starts no trial child: the guard in tests/conftest.py is live."""

from __future__ import annotations

import os
from pathlib import Path

from child_requests import inspect_request
from conftest import GUARD_ENV

from tuner.driver.children._runner import run_child


def test_a_fast_test_cannot_start_a_trial_child() -> None:
    log = Path(os.environ[GUARD_ENV])
    run = run_child(inspect_request(), {}, timeout_s=60)
    assert run.returncode == 97 and run.result_text is None
    assert "refused by the fast-tier guard" in run.stderr_tail
    assert "tuner.worker" in log.read_text()
    log.unlink()  # seen and handled here, so the guard's own check does not fail this test
