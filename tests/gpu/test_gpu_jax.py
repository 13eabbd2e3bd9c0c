"""The GPU-only checks of the JAX backend (issue 18): a real ``tuner search --backend jax --gpus 0``
on one NVIDIA GPU under a memory cap. Skipped, with the reason, where JAX would see no NVIDIA GPU
(tests/conftest.py); ``benchmarks/gpu/run.sh`` runs them on the GPU machine. The backend's CPU
tests (tests/e2e/test_jax_search.py and others) run everywhere: these add only what a CPU cannot
show (the device's name, its peak memory, XLA's allocator running out of memory)."""

from __future__ import annotations

import os
from pathlib import Path

import optuna
import pytest
from conftest import run_tuner, tuner_env
from optuna.trial import FrozenTrial, TrialState

from tuner.core.record import decode
from tuner.driver.setup.devices import visible_gpus

pytestmark = [pytest.mark.gpu, pytest.mark.slow]

# 64 -> Dense(8192) -> 1: one activation is 32 KiB a sample in float32, so global batch 512
# (16 MiB) trains under a 256 MiB cap and 16,384 (512 MiB) cannot.
SPEC = """
[study]
name = "gpu"

[workload]
model = "tuner_test_workloads:wide_model"
data = "tuner_test_workloads:wide_data"
loss = "mse"
optimizer = "adam"
backend = "jax"

[search]
base_batch_size = 512
batch_multipliers = [1, 32]
lr_rules = ["none"]
base_lr = 1e-3
epochs = 2
"""
CAP = "256MiB"


@pytest.fixture(scope="module")
def gpu_study(tmp_path_factory: pytest.TempPathFactory) -> dict[int, FrozenTrial]:
    """One real search on GPU 0 capped at 256 MiB: batch 512 trains, 16,384 runs out of memory.
    Returns the trials by global batch."""
    work = tmp_path_factory.mktemp("gpu-study")
    (work / "gpu.toml").write_text(SPEC)
    env = tuner_env()
    # tuner_env hides GPUs from ordinary tests; here the GPU is the point.
    if "CUDA_VISIBLE_DEVICES" in os.environ:
        env["CUDA_VISIBLE_DEVICES"] = os.environ["CUDA_VISIBLE_DEVICES"]
    else:
        del env["CUDA_VISIBLE_DEVICES"]
    result = run_tuner(
        "search",
        "--spec",
        "gpu.toml",
        "--gpus",
        "0",
        "--memory-limit",
        CAP,
        "--storage",
        "sqlite:///gpu.db",
        "--trial-timeout",
        "300",
        cwd=work,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    study = optuna.load_study(study_name="gpu", storage=f"sqlite:///{Path(work) / 'gpu.db'}")
    return {decode(trial).configuration.global_batch_size: trial for trial in study.get_trials()}


def test_a_gpu_trial_names_the_gpu_and_its_backend(gpu_study: dict[int, FrozenTrial]) -> None:
    attrs = decode(gpu_study[512]).flat
    assert gpu_study[512].state == TrialState.COMPLETE, attrs
    assert attrs["backend"] == "jax"
    assert attrs["device_kind"] == visible_gpus()[0].name
    assert attrs["num_replicas"] == 1
    assert "tensorflow" not in attrs.get("versions", {})


def test_a_gpu_trial_measures_its_peak_memory(gpu_study: dict[int, FrozenTrial]) -> None:
    attrs = decode(gpu_study[512]).flat
    # At least the weights (0.5 M float32 values), Adam's two slots and one batch's activations.
    assert attrs["peak_memory_bytes"] > 6 * 2**20
    assert attrs["peak_memory_bytes"] <= 256 * 2**20
    assert attrs["throughput"] > 0


def test_a_batch_past_the_cap_is_pruned_as_out_of_memory(
    gpu_study: dict[int, FrozenTrial],
) -> None:
    trial = gpu_study[16_384]
    assert trial.state == TrialState.PRUNED, trial.user_attrs
    assert decode(trial).status == "oom"
    error = decode(trial).error
    assert "RESOURCE_EXHAUSTED" in error or "memory" in error.lower(), error
