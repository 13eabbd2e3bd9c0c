"""How tests/conftest.py prepares JAX tests: two host CPU devices in XLA_FLAGS, and the ``gpu``
marker's skip where JAX would see no NVIDIA GPU (decided without importing jax)."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import conftest
import pytest


def test_the_test_process_asks_jax_for_two_host_devices() -> None:
    assert f"{conftest.HOST_DEVICES_FLAG}=2" in os.environ["XLA_FLAGS"]


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ("", "--xla_force_host_platform_device_count=2"),
        ("--xla_dump_to=/tmp/x", "--xla_dump_to=/tmp/x --xla_force_host_platform_device_count=2"),
        ("--xla_force_host_platform_device_count=4", "--xla_force_host_platform_device_count=4"),
    ],
)
def test_xla_flags_gain_the_device_count_unless_they_name_one(flags: str, expected: str) -> None:
    assert conftest._two_host_devices(flags) == expected


def test_no_nvidia_smi_means_no_gpu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert "nvidia-smi" in conftest._why_no_gpu()


def _dist(name: str, version: str) -> SimpleNamespace:
    return SimpleNamespace(metadata={"Name": name}, version=version)


@pytest.mark.parametrize(
    ("installed", "cuda"),
    [
        ([("jax", "0.11.2"), ("jaxlib", "0.11.2"), ("jax-cuda13-plugin", "0.11.2")], True),
        ([("jax", "0.11.2"), ("jax_cuda12_pjrt", "0.11.2")], True),
        ([("jax", "0.4.20"), ("jaxlib", "0.4.20+cuda12.cudnn89")], True),
        ([("jax", "0.10.2"), ("jaxlib", "0.10.2")], False),
        ([], False),
    ],
)
def test_a_cuda_build_of_jax_is_told_from_its_distributions(
    monkeypatch: pytest.MonkeyPatch, installed: list[tuple[str, str]], cuda: bool
) -> None:
    dists = [_dist(name, version) for name, version in installed]
    monkeypatch.setattr(conftest.importlib.metadata, "distributions", lambda: dists)
    assert conftest._jax_has_cuda() is cuda


@pytest.mark.slow
def test_jax_started_from_the_test_process_sees_two_cpu_devices() -> None:
    code = "import jax; print(jax.device_count(), jax.devices()[0].platform)"
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["2", "cpu"]


def test_the_jax_extra_brings_jax_and_keras_and_the_tests_install_it() -> None:
    pyproject = tomllib.loads((conftest.TESTS.parent / "pyproject.toml").read_text())
    extras = pyproject["project"]["optional-dependencies"]
    assert {dep.split(">=")[0] for dep in extras["jax"]} == {"jax", "keras", "filelock"}
    assert "mirrortuner[jax]" in extras["test"]
    assert not any(dep.startswith("jax") for dep in pyproject["project"]["dependencies"])
