"""``--backend jax`` refusals at the command line: one line, the right exit code, no child, the
stored study untouched (run in this process: no child starts before these checks)."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest
from conftest import invoke_tuner, sha256
from trials import write_small_study

LOOP_LINE = "--loop = custom runs on TensorFlow only; --backend is jax"
UPDATE_LINE = "--update-on = cpu runs on TensorFlow only; --backend is jax"
INSTALL_LINE = '--backend jax needs jax, which is not installed: pip install "mirrortuner[jax]"'


@pytest.fixture(scope="module")
def stored_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_small_study(tmp_path_factory.mktemp("jax-flags") / "small.db")


@pytest.fixture()
def stored(stored_template: Path, tmp_path: Path) -> tuple[Path, str]:
    db = tmp_path / "copy.db"
    shutil.copy(stored_template, db)
    return db, f"sqlite:///{db}"


def _one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


@pytest.mark.parametrize(
    ("command", "flags", "line"),
    [
        ("probe", ["--loop", "custom"], LOOP_LINE),
        ("validate", ["--loop", "custom"], LOOP_LINE),
        ("validate", ["--loop", "custom", "--update-on", "cpu"], UPDATE_LINE),
    ],
)
def test_tensorflow_only_modes_are_refused_under_jax(
    command: str, flags: list[str], line: str, stored: tuple[Path, str], tmp_path: Path
) -> None:
    db, url = stored
    digest = sha256(db)
    storage = ["--storage", url, "--study-name", "small"] if command != "validate" else []
    args = [command, "--backend", "jax", "--cpu-replicas", "2", *flags, *storage]
    result = invoke_tuner(*args, cwd=tmp_path)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert _one_line(result.stderr).startswith(f"error: {line}")
    assert sha256(db) == digest


def test_replica_mean_with_tensorflow_fit_is_refused_before_any_child(tmp_path: Path) -> None:
    result = invoke_tuner(
        "validate", "--cpu-replicas", "2", "--loss-reduction", "replica-mean", cwd=tmp_path
    )
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "applies to custom loops only under TensorFlow" in result.stderr
    assert "under --backend jax it applies to fit" in result.stderr


@pytest.mark.parametrize("command", ["search", "probe", "validate"])
def test_missing_jax_names_the_extra_and_touches_nothing(
    command: str, monkeypatch: pytest.MonkeyPatch, stored: tuple[Path, str], tmp_path: Path
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "jax" else real(name, *a),
    )
    db, url = stored
    digest = sha256(db)
    storage = ["--storage", url, "--study-name", "small"] if command != "validate" else []
    result = invoke_tuner(
        command, "--backend", "jax", "--cpu-replicas", "2", *storage, cwd=tmp_path
    )
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert _one_line(result.stderr) == f"error: {INSTALL_LINE}"
    assert sha256(db) == digest
