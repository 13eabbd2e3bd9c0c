"""TensorFlow's C++ log lines (``E0000 … failed call to cuInit`` on a host without a GPU, oneDNN's,
absl's) kept out of the user's own process where tuner is what imports Keras there
(:mod:`tuner.load`). The children's stderr is never touched: it goes to their trial folders."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator

LEVEL_ENV = "TF_CPP_MIN_LOG_LEVEL"
QUIET_LEVEL = "3"
"""Errors too: cuInit's failure is logged as one, though TensorFlow then runs on the CPU."""
NATIVE_LINE = re.compile(
    rb"^(?:[IWEF]\d{4} \d\d:\d\d:\d+\.\d+ +\d+ [\w./-]+:\d+\] .*"
    rb"|WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR)"
    rb"\r?\n?$"
)
"""absl's line format (severity, date, time (before absl is set up: seconds since 1970), thread,
file:line), and its one warning."""


@contextlib.contextmanager
def quiet_native_logs() -> Iterator[None]:
    """Within the block, C++ log lines on file descriptor 2 are dropped and every other line is
    written there at its end; an import of TensorFlow in it (which reads the level once) gets
    :data:`QUIET_LEVEL` where the user set none."""
    level_set = LEVEL_ENV not in os.environ and "tensorflow" not in sys.modules
    if level_set:
        os.environ[LEVEL_ENV] = QUIET_LEVEL
    try:
        with _native_lines_dropped():
            yield
    finally:
        if level_set:
            os.environ.pop(LEVEL_ENV, None)


@contextlib.contextmanager
def _native_lines_dropped() -> Iterator[None]:
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no descriptor 2 (a service), or a closed sys.stderr
        yield
        return
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            kept = [line for line in sink.readlines() if not NATIVE_LINE.match(line)]
            if kept:
                os.write(2, b"".join(kept))
