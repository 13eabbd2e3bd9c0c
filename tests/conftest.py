"""Shared helpers: run the real ``tuner`` CLI in a child process, write specs, hash files."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

SMALL_REGRESSION = """
[study]
name = "{name}"

[workload]
model = "tuner.workloads.regression:build_model"
data = "tuner_test_workloads:small_regression_data"
loss = "mse"
optimizer = "adam"

[search]
base_batch_size = {base}
batch_multipliers = {multipliers}
lr_rules = {rules}
base_lr = 1e-3
epochs = 2
"""


def tuner_env(**extra: str) -> dict[str, str]:
    """The environment for a ``tuner`` child: test workloads importable, no GPU."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(TESTS), env.get("PYTHONPATH")) if p)
    env["CUDA_VISIBLE_DEVICES"] = ""
    env["COLUMNS"] = "200"
    env.update(extra)
    return env


def run_tuner(
    *args: str, cwd: Path, timeout: float = 600, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m tuner ARGS`` and return the completed process (text output)."""
    return subprocess.run(
        [sys.executable, "-m", "tuner", *args],
        cwd=cwd,
        env=env or tuner_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def write_spec(
    path: Path,
    name: str = "small",
    base: int = 256,
    multipliers: str = "[1, 2]",
    rules: str = '["none", "linear", "sqrt"]',
) -> Path:
    """Write the small regression spec with the given grid."""
    path.write_text(
        SMALL_REGRESSION.format(name=name, base=base, multipliers=multipliers, rules=rules)
    )
    return path


def sha256(path: Path) -> str:
    """The file's SHA-256."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="session")
def small_study(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A real finished study (2 batch sizes × 3 rules, 2 CPU replicas) in SQLite: (dir, url)."""
    work = tmp_path_factory.mktemp("small-study")
    spec = write_spec(work / "small.toml")
    result = run_tuner(
        "search",
        "--study",
        str(spec),
        "--cpu-replicas",
        "2",
        "--storage",
        "sqlite:///small.db",
        "--export",
        "rec.json",
        cwd=work,
    )
    assert result.returncode == 0, result.stderr
    return work, "sqlite:///small.db"
