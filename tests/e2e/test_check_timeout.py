"""The workload check is a child like any trial: ``--trial-timeout`` bounds it too (it had a
fixed 600 s of its own). A real ``tuner search`` whose data never finish loading."""

from __future__ import annotations

import pytest
from conftest import SMALL_REGRESSION, run_tuner

pytestmark = pytest.mark.slow


def test_a_workload_check_past_the_trial_timeout_is_one_line_and_stores_nothing(tmp_path):
    spec = SMALL_REGRESSION.format(name="slow", base=64, multipliers="[1]", rules='["none"]')
    data = "tuner_test_workloads:small_regression_data"
    (tmp_path / "slow.toml").write_text(spec.replace(data, "slow_loading_data:load_data"))
    args = ["search", "--spec", "slow.toml", "--cpu-replicas", "2", "--no-baseline"]
    # Well under the old fixed 600 s, which run_tuner's own timeout (300 s) would have hit first;
    # the data never load, so any bound proves it, and a short one costs the suite least.
    args += ["--trial-timeout", "8", "--storage", "sqlite:///s.db"]
    result = run_tuner(*args, cwd=tmp_path, timeout=300)
    assert result.returncode == 1, result.stderr
    (line,) = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert "the workload check did not finish within 8 s (--trial-timeout)" in line
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "s.db").exists()  # checked before the storage is opened
