"""The layer rules are enforced: ``lint-imports`` keeps the real tree and breaks on a wrong import.

The contracts live in pyproject.toml ([tool.importlinter]); CI runs ``lint-imports`` on the tree.
This test proves the contracts bite: a copy of the package with one forbidden import fails."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINT = shutil.which("lint-imports")

pytestmark = pytest.mark.skipif(LINT is None, reason="import-linter is not installed")


def lint(root: Path) -> subprocess.CompletedProcess[str]:
    assert LINT is not None
    return subprocess.run(
        [LINT, "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def copy_tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(REPO / "tuner", root / "tuner", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("worker/probe.py", "import tuner.driver.children", "Layers"),
        ("worker/backends/jax/_loop.py", "import tuner.worker.backends.tensorflow", "A backend"),
        ("core/stats.py", "import tuner.core.racing", "No import cycle"),
        ("driver/study.py", "import tuner.driver.children._runner", "Private modules"),
        ("core/scaling.py", "import tensorflow", "The core is pure"),
        ("worker/losses.py", "import tuner.storage", "The worker never touches the study"),
        (
            "driver/trial/grid.py",
            "import tuner.views.batch_figures",
            "The driver reaches the views only",
        ),
    ],
)
def test_a_forbidden_import_breaks_its_contract(
    tmp_path: Path, module: str, line: str, contract: str
) -> None:
    root = copy_tree(tmp_path)
    assert lint(root).returncode == 0  # the copy itself keeps every contract
    path = root / "tuner" / module
    path.write_text(path.read_text() + f"\n{line}  # noqa\n")
    result = lint(root)
    assert result.returncode != 0
    broken = [row for row in result.stdout.splitlines() if " BROKEN" in row]
    assert len(broken) == 1 and broken[0].startswith(contract), result.stdout
