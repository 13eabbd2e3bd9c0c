"""TensorFlow's C++ log lines, kept out of the user's process where tuner imports Keras there
(issue 46): absl's lines dropped, every other line kept, the user's level never overridden."""

from __future__ import annotations

import os
import sys

import pytest

from tuner import load as native_logs
from tuner.load import LEVEL_ENV, quiet_native_logs

NATIVE = (
    b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
    b"I0000 00:00:1796568867.246053   29850 port.cc:153] oneDNN custom operations are on.\n"
    b"E0000 00:00:1796568868.959348   29850 cuda_platform.cc:52] failed call to cuInit: "
    b"INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)\n"
)


def test_absl_lines_are_dropped_and_the_rest_kept(capfd: pytest.CaptureFixture[str]) -> None:
    with quiet_native_logs():
        os.write(2, NATIVE)
        os.write(2, b"Traceback (most recent call last): a line of the user's\n")
        print("said on stderr", file=sys.stderr)
    err = capfd.readouterr().err
    assert "cuInit" not in err and "oneDNN" not in err and "absl" not in err
    assert "a line of the user's" in err and "said on stderr" in err


def test_the_level_only_where_the_user_set_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)
    monkeypatch.delenv(LEVEL_ENV, raising=False)
    with quiet_native_logs():
        assert os.environ[LEVEL_ENV] == native_logs.QUIET_LEVEL  # for an import in the block
    assert LEVEL_ENV not in os.environ  # TensorFlow read it at import: the environment is back
    monkeypatch.setenv(LEVEL_ENV, "0")  # the user asked for every line
    with quiet_native_logs():
        assert os.environ[LEVEL_ENV] == "0"
