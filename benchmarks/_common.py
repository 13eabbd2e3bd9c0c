"""Helpers shared by the benchmark scripts (run them from the repository root)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tuner.core.outcome import classify
from tuner.core.protocol import DEFAULT_TRIAL_TIMEOUT_S
from tuner.driver.children import child_runner, trial_request
from tuner.driver.setup.devices import plan_devices
from tuner.driver.setup.spec_file import load_spec

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def tuner_trial(
    batch: int, replicas: int, epochs: int = 3, spec_path: str | None = None
) -> dict[str, Any]:
    """One tuner trial of the built-in regression workload, exactly as `tuner search` runs it."""
    spec = load_spec(spec_path, {"search.epochs": epochs})
    plan, _ = plan_devices(None, replicas, None)
    request = trial_request(spec, plan, batch, spec.search.grid.base_lr)
    outcome = classify(
        child_runner().run(request, plan.child_environment(), DEFAULT_TRIAL_TIMEOUT_S),
        memory_capped=False,
    )
    assert outcome.status == "ok", outcome
    return {"throughput": outcome.values[1], **outcome.attrs}


def plain_keras(batch: int, replicas: int, epochs: int = 3, cached: bool = False) -> float:
    """Throughput measured by an independent plain-Keras script in its own process."""
    args = [sys.executable, str(HERE / "plain_keras.py"), str(batch), str(replicas), str(epochs)]
    if cached:
        args.append("--cached")
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""}
    out = subprocess.run(args, capture_output=True, text=True, env=env, check=True).stdout
    return float(json.loads(out.strip().splitlines()[-1])["throughput"])


def tuner_cli(*args: str, cwd: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Run `python -m tuner ARGS`; return its wall time and the completed process."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'tests'}", "COLUMNS": "160"}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "tuner", *args], cwd=cwd, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return time.perf_counter() - started, done


def summary(values: list[float]) -> str:
    """Median with min and max."""
    return f"median {statistics.median(values):.3f} (min {min(values):.3f}, max {max(values):.3f})"
