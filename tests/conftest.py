"""Shared helpers: run the real ``tuner`` CLI in a child process, write specs, hash files."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


WIDE = """
[study]
name = "wide"

[workload]
model = "tuner_test_workloads:wide_model"
data = "tuner_test_workloads:wide_data"

[search]
base_batch_size = 512
batch_multipliers = [1, 2, 8, 16]
lr_rules = ["none", "sqrt"]
base_lr = 1e-3
epochs = 2
"""
"""A model wide enough to run out of memory under a 128 MiB cap at global batch 4096."""

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


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


def search_wide(cwd: Path, db: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """``tuner search`` of ``cwd/wide.toml`` on 2 CPU replicas capped at 128 MiB each."""
    return run_tuner(
        "search",
        "--study",
        "wide.toml",
        "--cpu-replicas",
        "2",
        "--memory-limit",
        "128MiB",
        "--storage",
        f"sqlite:///{db}",
        *extra,
        cwd=cwd,
    )


@pytest.fixture(scope="session")
def wide_study(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A real study with out-of-memory trials (cap 128 MiB per device, 2 CPU replicas):
    512 and 1024 train, 4096 runs out of memory, 8192 is implied. Returns (dir, url)."""
    work = tmp_path_factory.mktemp("wide-study")
    (work / "wide.toml").write_text(WIDE)
    result = search_wide(work, "wide.db", "--export", "rec.json")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return work, "sqlite:///wide.db"


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    """Debian's headless Chromium driven by Playwright (``.ci/run`` installs both)."""
    assert CHROMIUM.exists(), f"{CHROMIUM} is missing: apt-get install chromium"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()


def save_screenshot(page: Any, tmp_path: Path, name: str) -> Path:
    """Screenshot the page into ``tmp_path``; also into ``$TUNER_SCREENSHOTS`` when set (the
    README's images are made this way)."""
    path = tmp_path / name
    page.screenshot(path=str(path), full_page=False)
    assert path.stat().st_size > 10_000, "a blank screenshot"
    if os.environ.get("TUNER_SCREENSHOTS"):
        target = Path(os.environ["TUNER_SCREENSHOTS"])
        target.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(target / name), full_page=False)
    return path
