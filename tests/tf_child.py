"""Run a test's script with Keras on TensorFlow in a child process, where it sets up its own
logical CPU devices (a process configures its devices once, before TensorFlow starts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any


def run_two_replicas(code: str) -> dict[str, Any]:
    """Run ``code`` with Keras on TensorFlow; the JSON its last line prints."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "KERAS_BACKEND": "tensorflow"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]
