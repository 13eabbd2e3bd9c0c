"""Device plans under ``--backend jax``: the child's environment, the signatures that keep JAX's
measurements apart from TensorFlow's, the GPU memory nvidia-smi reports, the workload check's
environment and the line when jax is not installed (no child process, no JAX imported)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from typing import Any

import pytest

from tuner.core.devices import (
    CPU_CAP_ENV,
    DevicePlan,
    GpuInfo,
    host_device_flags,
    inspect_environment,
)
from tuner.core.errors import ConfigError, MissingExtraError
from tuner.core.spec import spec_from_dict
from tuner.driver.setup import devices
from tuner.driver.setup.devices import plan_devices, require_backend
from tuner.driver.validate import run as validate

H200 = 143771 * 2**20
TWO_H200 = [GpuInfo(0, "NVIDIA H200", H200), GpuInfo(1, "NVIDIA H200", H200)]


def test_jax_cpu_plan_splits_the_host_through_xla_flags() -> None:
    plan, _ = plan_devices(None, 2, None, available=[], backend="jax")
    assert plan.backend == "jax"
    env = plan.child_environment(environ={})
    assert env == {
        "KERAS_BACKEND": "jax",
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "JAX_PLATFORMS": "cpu",
        "CUDA_VISIBLE_DEVICES": "",
        "XLA_FLAGS": "--xla_force_host_platform_device_count=2",
    }


def test_inherited_xla_flags_are_kept_and_an_old_device_count_replaced() -> None:
    plan = DevicePlan("cpu", 3, backend="jax")
    inherited = "--xla_dump_to=/tmp/x --xla_force_host_platform_device_count=8"
    env = plan.child_environment(environ={"XLA_FLAGS": inherited})
    assert env["XLA_FLAGS"] == "--xla_dump_to=/tmp/x --xla_force_host_platform_device_count=3"
    assert host_device_flags("", 1) == "--xla_force_host_platform_device_count=1"
    # The one-device reference run of validate and the baseline: one host device.
    single = plan.single_device().child_environment(environ={"XLA_FLAGS": inherited})
    assert single["XLA_FLAGS"].endswith("device_count=1")
    assert single["XLA_FLAGS"].count("device_count") == 1


def test_jax_cpu_cap_is_limit_times_replicas_for_the_child_to_apply() -> None:
    plan, _ = plan_devices(None, 2, "256MiB", available=[], backend="jax")
    env = plan.child_environment(environ={})
    assert env[CPU_CAP_ENV] == str(2 * 256 * 2**20)
    assert env["MALLOC_ARENA_MAX"] == "2"  # few malloc arenas: the cap measures allocations
    assert "TF_MKL_ALLOC_MAX_BYTES" not in env and "TF_ENABLE_ONEDNN_OPTS" not in env


def test_jax_gpu_plan_without_cap_grows_memory() -> None:
    plan, _ = plan_devices("1", None, None, available=TWO_H200, backend="jax")
    env = plan.child_environment(environ={})
    assert env["CUDA_VISIBLE_DEVICES"] == "1"
    assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert "XLA_PYTHON_CLIENT_MEM_FRACTION" not in env
    assert env["JAX_PLATFORMS"] == "cuda"  # a CPU-only jaxlib fails instead of using the CPU
    assert "XLA_FLAGS" not in env


def test_jax_gpu_cap_is_a_fraction_of_the_total_memory() -> None:
    plan, _ = plan_devices("0,1", None, "14GiB", available=TWO_H200, backend="jax")
    env = plan.child_environment(environ={})
    assert env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "true"
    assert float(env["XLA_PYTHON_CLIENT_MEM_FRACTION"]) == pytest.approx(14 * 2**30 / H200)
    assert env["XLA_CLIENT_MEM_FRACTION"] == ""  # jax refuses both names set
    assert plan.gpu_memory_bytes == (H200, H200)
    assert plan.single_device().gpu_memory_bytes == (H200,)


def test_jax_gpu_cap_without_a_known_total_is_refused_at_planning() -> None:
    with pytest.raises(ConfigError, match=r"nvidia-smi did not report memory\.total"):
        plan_devices(None, None, "1GiB", available=[GpuInfo(0, "X")], backend="jax")
    # TensorFlow caps by size, not fraction: the same flags plan fine there.
    plan, _ = plan_devices(None, None, "1GiB", available=[GpuInfo(0, "X")])
    assert plan.memory_limit_bytes == 2**30


def test_signatures_tell_jax_apart_and_keep_tensorflow_as_stored() -> None:
    tf_plan = DevicePlan("cpu", 2, memory_limit_bytes=512 * 2**20)
    jax_plan = DevicePlan("cpu", 2, memory_limit_bytes=512 * 2**20, backend="jax")
    assert tf_plan.signature == "2x cpu"
    assert tf_plan.device_signature == "2x cpu, cap 512 MiB per device"
    assert jax_plan.signature == "2x cpu, jax"
    assert jax_plan.device_signature == "2x cpu, jax, cap 512 MiB per device"
    gpu = DevicePlan("gpu", 2, (0, 1), ("NVIDIA H200",) * 2, backend="jax")
    assert gpu.device_signature == "2x NVIDIA H200, jax"
    assert gpu.single_device().signature == "1x NVIDIA H200, jax"


def test_tensorflow_environment_pins_keras_to_tensorflow() -> None:
    """As before the backend field, plus KERAS_BACKEND: a user's KERAS_BACKEND=jax must not put
    Keras on JAX inside a MirroredStrategy run."""
    plan = DevicePlan("cpu", 2, memory_limit_bytes=2**28)
    assert plan.child_environment(environ={"XLA_FLAGS": "--x"}) == {
        "KERAS_BACKEND": "tensorflow",
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "CUDA_VISIBLE_DEVICES": "",
        "TF_ENABLE_ONEDNN_OPTS": "1",
        "TF_MKL_ALLOC_MAX_BYTES": str(2 * 2**28),
    }


def test_plan_dict_carries_the_backend() -> None:
    plan = DevicePlan("gpu", 2, (0, 1), ("A", "A"), 2**30, backend="jax", gpu_memory_bytes=(1, 2))
    data = json.loads(json.dumps(plan.to_dict()))
    assert data["backend"] == "jax"


def test_inspect_environment_per_backend() -> None:
    assert inspect_environment("tensorflow") == {
        "CUDA_VISIBLE_DEVICES": "",
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "KERAS_BACKEND": "tensorflow",
    }
    env = inspect_environment("jax")
    assert env["KERAS_BACKEND"] == "jax"
    assert env["JAX_PLATFORMS"] == "cpu"
    assert "XLA_FLAGS" not in env


def test_nvidia_smi_memory_total_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(devices.shutil, "which", lambda name: "/usr/bin/nvidia-smi")
    seen: list[Any] = []

    def fake_run(*args: Any, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        seen.append(args[0])
        out = "0, NVIDIA H200, 143771\n1, Odd, Name, [N/A]\nNo devices were found\n"
        return subprocess.CompletedProcess(args, 0, stdout=out, stderr="")

    monkeypatch.setattr(devices.subprocess, "run", fake_run)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert devices.visible_gpus() == [GpuInfo(0, "NVIDIA H200", H200), GpuInfo(1, "Odd, Name")]
    assert "--query-gpu=index,name,memory.total" in seen[0]


def test_missing_jax_is_one_line_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "jax" else real(name, *a),
    )
    with pytest.raises(MissingExtraError) as info:
        require_backend("jax")
    assert str(info.value) == (
        '--backend jax needs jax, which is not installed: pip install "mirrortuner[jax]"'
    )
    require_backend("tensorflow")  # never looks for jax


def _spec(backend: str, loop: str = "fit") -> Any:
    return spec_from_dict(None, {"workload.backend": backend, "search.loop": loop})


@pytest.mark.parametrize(
    ("backend", "loop", "accepted"),
    [("tensorflow", "fit", False), ("tensorflow", "custom", True), ("jax", "fit", True)],
)
def test_replica_mean_rule(backend: str, loop: str, accepted: bool) -> None:
    """One rule: the wrong reduction can be planted only where the child reduces the loss."""
    assert validate.reduces_its_own_loss(_spec(backend, loop)) is accepted
    plan = DevicePlan("cpu", 2, backend=backend)
    if accepted:
        validate._check_options(_spec(backend, loop), plan, "replica-mean", 64)
    else:
        with pytest.raises(ConfigError, match="under --backend jax it applies to fit"):
            validate._check_options(_spec(backend, loop), plan, "replica-mean", 64)
