"""The machine's GPUs, found without importing TensorFlow, and the device plan of a run."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess

from tuner.core.devices import (
    JAX_BACKEND,
    TENSORFLOW_BACKEND,
    DevicePlan,
    GpuInfo,
    choose_devices,
)
from tuner.core.errors import MissingExtraError
from tuner.core.options import named


def visible_gpus() -> list[GpuInfo]:
    """The GPUs ``nvidia-smi`` shows (none without it), honouring ``CUDA_VISIBLE_DEVICES``."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    try:
        out = subprocess.run(
            [exe, "--query-gpu=index,name,memory.total", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    gpus = [gpu for gpu in map(_gpu_line, out.splitlines()) if gpu is not None]
    mask = os.environ.get("CUDA_VISIBLE_DEVICES")
    if mask is not None and all(p.strip().isdigit() for p in mask.split(",") if p.strip()):
        allowed = {int(p) for p in mask.split(",") if p.strip()}
        gpus = [gpu for gpu in gpus if gpu.index in allowed]
    return gpus


def _gpu_line(line: str) -> GpuInfo | None:
    """One ``index, name, memory.total`` line (MiB, no units); the memory may be missing or
    ``[N/A]``. ``None`` for a line that names no GPU (``No devices were found``)."""
    parts = [part.strip() for part in line.split(",")]
    if len(parts) < 2 or not parts[0].isdigit():
        return None
    memory = None
    if len(parts) >= 3:
        total = parts.pop()
        memory = int(total) * 2**20 if total.isdigit() else None
    return GpuInfo(int(parts[0]), ", ".join(parts[1:]), memory)


def plan_devices(
    gpus: str | None,
    cpu_replicas: int | None,
    memory_limit: str | None,
    available: list[GpuInfo] | None = None,
    backend: str = TENSORFLOW_BACKEND,
) -> tuple[DevicePlan, str | None]:
    """Decide the devices of a run from the flags; returns the plan and a notice, if any."""
    found = visible_gpus() if available is None else available
    return choose_devices(gpus, cpu_replicas, memory_limit, found, backend)


def require_backend(backend: str) -> None:
    """Raise :class:`MissingExtraError` when ``backend`` is jax and jax or keras cannot be
    imported here. Looks, never imports: the driver stays free of JAX and TensorFlow."""
    if backend != JAX_BACKEND:
        return
    missing = [name for name in ("jax", "keras") if not _importable(name)]
    if missing:
        verb = "is" if len(missing) == 1 else "are"
        raise MissingExtraError(
            f"{named('backend')} jax needs {' and '.join(missing)}, which {verb} not installed: "
            'pip install "mirrortuner[jax]"'
        )


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # ValueError: a module blocked with sys.modules[name] = None
        return False
