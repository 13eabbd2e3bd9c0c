"""``benchmarks/gpu/run.sh --smoke``: the GPU check's own script, end to end on CPU replicas
with its tiny specs (real JAX children, real SQLite): the gpu tests skip with their reason; the
search, ``tuner export``, the cache-off study, ``tuner validate`` (refused on one device, then
``--accumulation 2``), the sweep (three rates at one batch) and the summary all run, and $OUT
holds what the GPU run hands back."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TESTS

pytestmark = pytest.mark.slow

SCRIPT = TESTS.parent / "benchmarks" / "gpu" / "run.sh"


def test_the_gpu_script_runs_its_smoke_mode_and_writes_its_outputs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = {
        **os.environ,
        "OUT": str(out),
        "TUNER_GPU_WHEELS": str(tmp_path / "no-wheels"),  # the installed packages, as here
        "CUDA_VISIBLE_DEVICES": "",
        "PYTHON": sys.executable,  # this interpreter's packages, whatever python3 is on PATH
    }
    run = subprocess.run(
        ["bash", str(SCRIPT), "--smoke"], env=env, capture_output=True, text=True, timeout=1500
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    names = {"study.db", "recommendation.json", "sweep.json", "validate.json", "summary.md"}
    assert names | {"log.txt"} == {p.name for p in out.iterdir()}  # nothing else travels back
    log = (out / "log.txt").read_text()
    assert "needs an NVIDIA GPU visible to JAX" in log  # skipped, with the reason
    assert "search exit code: 0" in log
    rec = json.loads((out / "recommendation.json").read_text())
    assert rec["global_batch_size"] in (32, 128)
    assert rec["num_replicas"] == 2
    summary = (out / "summary.md").read_text()
    assert "- device: cpu" in summary
    assert "the search did not finish" not in summary
    for heading in ("## Throughput", "## Out-of-memory boundary", "## Trial overhead"):
        assert heading in summary
    assert "- cache off, batch 128 float32: trials compile in " in summary
    assert "select at least 2 devices" in summary  # validate on one device, said as it is
    assert "--accumulation 2, accumulated_weights: pass" in summary
    assert json.loads((out / "sweep.json").read_text())["lr_law"]["lr_star_by_batch"]
    for row in ("| 32 |", "| 128 |"):
        assert row in summary
    assert "bf16 speedup" in summary and "knee at global batch" in summary
    with sqlite3.connect(out / "study.db") as db:
        counts = dict(
            db.execute(
                "SELECT study_name, COUNT(*) FROM trials JOIN studies USING (study_id) "
                "GROUP BY study_name"
            ).fetchall()
        )
    assert counts["convnet-smoke"] == 4  # 2 batches x 1 rule x float32, mixed_bfloat16
    assert counts["convnet-smoke-cache-off"] == 2  # none and sqrt at batch 128
