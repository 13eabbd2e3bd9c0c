"""Unit tests of device planning in the parent: sizes, ``--gpus``, plans and child environments."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from tuner.core.devices import (
    DEFAULT_CPU_REPLICAS,
    DevicePlan,
    GpuInfo,
    parse_gpus,
    parse_size,
)
from tuner.core.errors import ConfigError
from tuner.driver.setup import devices
from tuner.driver.setup.devices import plan_devices

TWO_GPUS = [GpuInfo(0, "A"), GpuInfo(1, "A")]

# --- parse_size ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("512MiB", 512 * 2**20),
        ("14GiB", 14 * 2**30),
        ("2GB", 2 * 10**9),
        ("1048576", 2**20),
        ("1.5GB", 1_500_000_000),
        ("1.5GiB", 3 * 2**29),
        (" 2 gib ", 2 * 2**30),
        ("1024KiB", 2**20),
        ("2000000b", 2_000_000),
    ],
)
def test_parse_size(text: str, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["12XB", "-1", "abc", "", "GiB", "1 2GiB", "1e9", "0x100000"])
def test_parse_size_rejects_garbage(text: str) -> None:
    with pytest.raises(ConfigError, match="--memory-limit must be a size such as") as info:
        parse_size(text)
    assert repr(text) in str(info.value)


@pytest.mark.parametrize("text", ["0.5KiB", "0", "1MB", "1048575", "0.99MiB"])
def test_parse_size_rejects_below_one_mib(text: str) -> None:
    with pytest.raises(ConfigError, match="at least 1MiB"):
        parse_size(text)


# --- parse_gpus ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"), [("0,1", (0, 1)), ("3", (3,)), (" 2 , 0 ", (2, 0)), ("10,11", (10, 11))]
)
def test_parse_gpus(text: str, expected: tuple[int, ...]) -> None:
    assert parse_gpus(text) == expected


@pytest.mark.parametrize("text", ["0,,1", "a", "-1", "", " ", "0,", "1.0", "0;1"])
def test_parse_gpus_rejects_garbage(text: str) -> None:
    with pytest.raises(ConfigError, match="--gpus must be comma-separated GPU indices"):
        parse_gpus(text)


def test_parse_gpus_rejects_duplicates() -> None:
    with pytest.raises(ConfigError, match="more than once"):
        parse_gpus("0,0")
    with pytest.raises(ConfigError, match="more than once"):
        parse_gpus("1, 0, 1")


# --- plan_devices --------------------------------------------------------------------------------


def test_no_gpu_means_cpu_replicas_with_a_notice() -> None:
    plan, notice = plan_devices(None, None, None, available=[])
    assert plan.kind == "cpu"
    assert plan.num_replicas == DEFAULT_CPU_REPLICAS == 2
    assert plan.gpu_indices == ()
    assert plan.memory_limit_bytes is None
    assert plan.device_names == ["/cpu:0", "/cpu:1"]
    assert plan.signature == "2x cpu"
    assert notice is not None
    assert "No GPU visible" in notice
    assert "2 logical CPU replicas" in notice


def test_missing_gpu_without_any_gpu() -> None:
    with pytest.raises(ConfigError, match="not present") as info:
        plan_devices("0,1", None, None, available=[])
    message = str(info.value)
    assert "GPU 0" in message
    assert "visible GPUs: none" in message
    assert "--cpu-replicas" in message


def test_missing_gpu_lists_the_visible_ones() -> None:
    with pytest.raises(ConfigError, match="GPU 2, which is not present") as info:
        plan_devices("0,2", None, None, available=TWO_GPUS)
    message = str(info.value)
    assert "visible GPUs: 0 (A), 1 (A)" in message
    assert "--cpu-replicas" not in message


def test_gpu_plan_from_flag() -> None:
    plan, notice = plan_devices("0,1", None, None, available=TWO_GPUS)
    assert notice is None
    assert plan.kind == "gpu"
    assert plan.num_replicas == 2
    assert plan.gpu_indices == (0, 1)
    assert plan.gpu_names == ("A", "A")
    assert plan.device_names == ["/gpu:0", "/gpu:1"]
    assert plan.signature == "2x A"
    env = plan.child_environment()
    assert env["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"  # the order nvidia-smi numbers GPUs in
    assert "TF_ENABLE_ONEDNN_OPTS" not in env
    assert "TF_MKL_ALLOC_MAX_BYTES" not in env


def test_gpu_plan_defaults_to_all_visible() -> None:
    gpus = [GpuInfo(2, "B"), GpuInfo(5, "B"), GpuInfo(7, "B")]
    plan, notice = plan_devices(None, None, "1GiB", available=gpus)
    assert notice is None
    assert plan.kind == "gpu"
    assert plan.num_replicas == 3
    assert plan.gpu_indices == (2, 5, 7)
    assert plan.memory_limit_bytes == 2**30
    env = plan.child_environment()
    assert env["CUDA_VISIBLE_DEVICES"] == "2,5,7"
    assert "TF_MKL_ALLOC_MAX_BYTES" not in env
    # Inside the child the visible GPUs are renumbered from 0.
    assert plan.device_names == ["/gpu:0", "/gpu:1", "/gpu:2"]


def test_gpu_subset_keeps_the_order_given() -> None:
    plan, _ = plan_devices("1", None, None, available=TWO_GPUS)
    assert plan.gpu_indices == (1,)
    assert plan.num_replicas == 1
    assert plan.child_environment()["CUDA_VISIBLE_DEVICES"] == "1"


def test_gpus_and_cpu_replicas_together() -> None:
    with pytest.raises(ConfigError, match="either --gpus or --cpu-replicas, not both"):
        plan_devices("0", 2, None, available=TWO_GPUS)


@pytest.mark.parametrize("replicas", [0, -1])
def test_cpu_replicas_must_be_positive(replicas: int) -> None:
    with pytest.raises(ConfigError, match=f"--cpu-replicas must be at least 1, got {replicas}"):
        plan_devices(None, replicas, None, available=[])


def test_cpu_replicas_win_over_visible_gpus() -> None:
    plan, notice = plan_devices(None, 4, None, available=TWO_GPUS)
    assert notice is None
    assert plan.kind == "cpu"
    assert plan.num_replicas == 4
    assert plan.gpu_indices == ()


def test_cpu_plan_with_memory_limit() -> None:
    plan, _ = plan_devices(None, 3, "512MiB", available=[])
    assert plan.memory_limit_bytes == 512 * 2**20
    env = plan.child_environment()
    assert env["CUDA_VISIBLE_DEVICES"] == ""
    assert env["TF_ENABLE_ONEDNN_OPTS"] == "1"
    assert env["TF_MKL_ALLOC_MAX_BYTES"] == str(512 * 2**20 * 3)
    assert env["TF_CPP_MIN_LOG_LEVEL"] == "2"


def test_cpu_plan_without_memory_limit() -> None:
    plan, _ = plan_devices(None, None, None, available=[])
    env = plan.child_environment()
    assert env["CUDA_VISIBLE_DEVICES"] == ""
    assert env["TF_ENABLE_ONEDNN_OPTS"] == "1"
    assert "TF_MKL_ALLOC_MAX_BYTES" not in env


def test_bad_memory_limit_is_reported() -> None:
    with pytest.raises(ConfigError, match="--memory-limit"):
        plan_devices(None, 2, "lots", available=[])


# --- DevicePlan ----------------------------------------------------------------------------------


def test_single_device_gpu() -> None:
    plan = DevicePlan("gpu", 2, (3, 4), ("A", "A"), memory_limit_bytes=2**30)
    single = plan.single_device()
    assert single == DevicePlan("gpu", 1, (3,), ("A",), memory_limit_bytes=2**30)
    assert single.signature == "1x A"
    assert single.device_names == ["/gpu:0"]
    assert single.child_environment()["CUDA_VISIBLE_DEVICES"] == "3"
    assert plan.num_replicas == 2  # unchanged


def test_single_device_cpu() -> None:
    plan = DevicePlan("cpu", 4, memory_limit_bytes=2**28)
    single = plan.single_device()
    assert single == DevicePlan("cpu", 1, memory_limit_bytes=2**28)
    assert single.signature == "1x cpu"
    assert single.child_environment()["TF_MKL_ALLOC_MAX_BYTES"] == str(2**28)


@pytest.mark.parametrize(
    "plan",
    [
        DevicePlan("gpu", 2, (0, 1), ("NVIDIA H200", "NVIDIA H200"), memory_limit_bytes=2**34),
        DevicePlan("cpu", 2),
        DevicePlan("cpu", 3, memory_limit_bytes=2**29),
    ],
)
def test_to_dict_is_plain_data(plan: DevicePlan) -> None:
    data = plan.to_dict()
    assert data["kind"] == plan.kind
    assert data["num_replicas"] == plan.num_replicas
    assert json.loads(json.dumps(data))["gpu_indices"] == list(plan.gpu_indices)


# --- visible_gpus (nvidia-smi stubbed, no child process) -----------------------------------------


def _fake_smi(monkeypatch: pytest.MonkeyPatch, stdout: str) -> None:
    monkeypatch.setattr(devices.shutil, "which", lambda name: "/usr/bin/nvidia-smi")

    def fake_run(*args: Any, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(args, 0, stdout=stdout, stderr="")

    monkeypatch.setattr(devices.subprocess, "run", fake_run)


def test_visible_gpus_without_nvidia_smi(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(devices.shutil, "which", lambda name: None)
    assert devices.visible_gpus() == []


def test_visible_gpus_parses_and_honours_mask(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_smi(monkeypatch, "0, NVIDIA H200\n1, NVIDIA H200\nNo devices were found\n")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert devices.visible_gpus() == [GpuInfo(0, "NVIDIA H200"), GpuInfo(1, "NVIDIA H200")]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert devices.visible_gpus() == [GpuInfo(1, "NVIDIA H200")]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert devices.visible_gpus() == []


def test_visible_gpus_when_nvidia_smi_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(devices.shutil, "which", lambda name: "/usr/bin/nvidia-smi")

    def failing_run(*args: Any, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        raise subprocess.CalledProcessError(9, "nvidia-smi")

    monkeypatch.setattr(devices.subprocess, "run", failing_run)
    assert devices.visible_gpus() == []


def test_mixed_gpu_models_name_every_model_in_the_signature() -> None:
    plan = DevicePlan(kind="gpu", num_replicas=2, gpu_indices=(0, 1), gpu_names=("A100", "H100"))
    assert plan.model == "A100 + H100"
    assert plan.signature == "2x A100 + H100"
    assert DevicePlan(kind="cpu", num_replicas=2).model == "cpu"
