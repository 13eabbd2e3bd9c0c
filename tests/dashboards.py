"""Starting and stopping the real ``tuner dashboard`` for the tests that browse it."""

from __future__ import annotations

import re
import select
import signal
import subprocess
import sys
from pathlib import Path

from conftest import tuner_env


def start_dashboard(
    cwd: Path, storage: str, within_s: float = 120
) -> tuple[subprocess.Popen[str], str]:
    """Start ``tuner dashboard --port 0`` and return the process and the URL it printed (within
    ``within_s``: its imports take seconds on a quiet machine, several times that on a busy one)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tuner", "dashboard", "--storage", storage, "--port", "0"],
        cwd=cwd,
        env=tuner_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], within_s)
    line = proc.stdout.readline() if ready else ""
    match = re.search(r"(http://127\.0\.0\.1:\d+/dashboard/)", line)
    if match is None:
        proc.kill()
        raise AssertionError(f"no URL printed: {line!r} {proc.communicate()[1]}")
    return proc, match.group(1)


def stop(proc: subprocess.Popen[str], sig: int = signal.SIGINT) -> tuple[int, str]:
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=30)
    return proc.returncode, stderr
