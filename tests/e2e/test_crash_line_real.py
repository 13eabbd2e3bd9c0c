"""A real trial child that dies without a result after TensorFlow started: its stored ``error``
is what the child said, never TensorFlow's start-up logging that ends its stderr ("Could not
find cuda drivers on your machine" was the stored reason of every crash on a CPU machine)."""

from __future__ import annotations

import pytest
from conftest import run_tuner, tuner_env, write_spec
from procs import load

from tuner.core.record import decode

pytestmark = pytest.mark.slow


def test_a_crashed_child_s_error_is_not_tensorflow_s_start_up_logging(tmp_path):
    write_spec(tmp_path / "small.toml", base=256, multipliers="[1, 2]", rules='["none"]')
    result = run_tuner(
        "search", "--spec", "small.toml", "--cpu-replicas", "2", "--storage", "sqlite:///c.db",
        "--no-baseline", cwd=tmp_path, env=tuner_env(TUNER_TEST_FAULT="segfault@256,exit@512"),
    )  # fmt: skip
    assert result.returncode == 1, result.stderr  # nothing completed: one line says why
    errors = {
        t.params["global_batch_size"]: decode(t).error
        for t in load(f"sqlite:///{tmp_path}/c.db").trials
    }
    # Neither child printed anything but TensorFlow's logging before it died: no line to add.
    assert errors == {
        256: "child died by SIGSEGV",
        512: "child exited with code 3 without a result",
    }
    assert "Could not find cuda drivers" not in result.stdout  # the table's note column
