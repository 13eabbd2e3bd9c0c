"""The machine's GPUs, found without importing TensorFlow, and the device plan of a run."""

from __future__ import annotations

import os
import shutil
import subprocess

from tuner.core.devices import DevicePlan, GpuInfo, choose_devices


def visible_gpus() -> list[GpuInfo]:
    """The GPUs this machine shows (``nvidia-smi``), honouring ``CUDA_VISIBLE_DEVICES``.

    Does not import TensorFlow. No ``nvidia-smi`` means no GPU.
    """
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    try:
        out = subprocess.run(
            [exe, "--query-gpu=index,name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    gpus = []
    for line in out.splitlines():
        index, _, name = line.partition(",")
        if index.strip().isdigit():
            gpus.append(GpuInfo(int(index), name.strip()))
    mask = os.environ.get("CUDA_VISIBLE_DEVICES")
    if mask is not None and all(p.strip().isdigit() for p in mask.split(",") if p.strip()):
        allowed = {int(p) for p in mask.split(",") if p.strip()}
        gpus = [gpu for gpu in gpus if gpu.index in allowed]
    return gpus


def plan_devices(
    gpus: str | None,
    cpu_replicas: int | None,
    memory_limit: str | None,
    available: list[GpuInfo] | None = None,
) -> tuple[DevicePlan, str | None]:
    """Decide the devices of a run from the flags; returns the plan and a notice, if any.

    ``available`` defaults to :func:`visible_gpus`.
    """
    found = visible_gpus() if available is None else available
    return choose_devices(gpus, cpu_replicas, memory_limit, found)
