"""Compile once (issue 31): JAX children share XLA's persistent compilation cache beside the
storage; its entries are keyed by the compiled program, so a seed, repeat or later study of the
same model and shape reads it and a new shape compiles afresh. TensorFlow gets none (Keras's
fit under MirroredStrategy does not compile with XLA)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tuner.driver.reuse import compile_cache, keys


def test_the_cache_lives_beside_the_storage(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(compile_cache.CACHE_ENV, raising=False)
    assert compile_cache.cache_folder(f"sqlite:///{tmp_path}/s.db") == tmp_path / "xla-cache"
    server = compile_cache.cache_folder("postgresql+psycopg://u:p@host/db")
    assert server == Path.home() / ".cache" / "tuner" / "xla-cache"
    monkeypatch.setenv(compile_cache.CACHE_ENV, str(tmp_path / "mine"))
    assert compile_cache.cache_folder("sqlite:///s.db") == tmp_path / "mine"
    monkeypatch.setenv(compile_cache.CACHE_ENV, "0")
    assert compile_cache.cache_folder("sqlite:///s.db") is None


def test_only_jax_children_get_it_and_only_while_the_search_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(compile_cache.CACHE_ENV, raising=False)
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    notes: list[str] = []
    url = f"sqlite:///{tmp_path}/s.db"
    with compile_cache.activated(url, "tensorflow", notes.append):
        assert "JAX_COMPILATION_CACHE_DIR" not in os.environ
    with compile_cache.activated(url, "jax", notes.append):
        assert os.environ["JAX_COMPILATION_CACHE_DIR"] == str(tmp_path / "xla-cache")
        assert os.environ["JAX_COMPILATION_CACHE_MAX_SIZE"] == str(compile_cache.MAX_BYTES)
    assert "JAX_COMPILATION_CACHE_DIR" not in os.environ
    assert notes == [
        f"compiled programs cached in {tmp_path / 'xla-cache'} (0.0 MiB of 1 GiB): seeds, "
        "repeats and resumes compile once"
    ]


def test_a_baseline_measured_with_the_cache_is_the_same_measurement(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    without = keys.runtime_environment()
    monkeypatch.setenv(compile_cache.CACHE_ENV, str(tmp_path))
    for key, value in compile_cache.environment(tmp_path).items():
        monkeypatch.setenv(key, value)
    assert keys.runtime_environment() == without


def train_steps(folder: Path) -> set[str]:
    return {p.name for p in folder.glob("jit_train_step-*-cache")}


@pytest.mark.slow
def test_a_second_study_reads_what_the_first_compiled(tmp_path: Path) -> None:
    """Two real JAX searches on one storage: the second (batches 32 and 64) compiles only its
    new shape's train step — the workload check's (8 samples) and batch 32's are read."""
    env = {k: v for k, v in os.environ.items() if k != compile_cache.CACHE_ENV}

    def search(name: str, multipliers: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tuner", "search", "--spec",
             "tuner/../studies/mnist-synthetic.toml", "--backend", "jax", "--storage",
             f"sqlite:///{tmp_path}/s.db", "--study-name", name, "--batch-multipliers",
             multipliers, "--lr-rules", "none", "--seeds", "1", "--max-repeats", "1",
             "--no-baseline", "--no-noise-scale", "--train-samples", "1024"],
            cwd=Path(__file__).resolve().parents[2], env=env, capture_output=True, text=True,
            timeout=600,
        )  # fmt: skip

    first = search("a", "1")
    assert first.returncode == 0, first.stderr[-2000:]
    assert f"compiled programs cached in {tmp_path / 'xla-cache'}" in first.stderr
    compiled = train_steps(tmp_path / "xla-cache")
    assert len(compiled) == 2  # the check's step and batch 32's
    second = search("b", "1,2")
    assert second.returncode == 0, second.stderr[-2000:]
    assert compiled < train_steps(tmp_path / "xla-cache")
    assert len(train_steps(tmp_path / "xla-cache") - compiled) == 1  # batch 64's alone
