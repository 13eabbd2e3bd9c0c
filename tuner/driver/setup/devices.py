"""The machine: its GPUs, found without importing TensorFlow, the device plan of a run, and how
busy it is before a search starts a child (the load average against the cores, other compute
processes on the GPUs), stored on the study so that figures measured on a busy machine say so."""

from __future__ import annotations

import os
import shutil
import subprocess
from datetime import UTC, datetime
from typing import Any

import optuna

from tuner.core.devices import JAX_BACKEND, TENSORFLOW_BACKEND, DevicePlan, GpuInfo, choose_devices
from tuner.core.errors import MissingExtraError
from tuner.core.options import named
from tuner.core.plan import MACHINE_LOAD, busiest, load_record
from tuner.core.record import decode_study, store_study
from tuner.extras import importable
from tuner.storage.guarded import storage_call

_NVIDIA_SMI_TIMEOUT_S = 10.0


def visible_gpus() -> list[GpuInfo]:
    """The GPUs ``nvidia-smi`` shows (none without it), honouring ``CUDA_VISIBLE_DEVICES``."""
    out = _nvidia_smi("--query-gpu=index,name,memory.total", "nounits", timeout_s=30)
    gpus = [gpu for gpu in map(_gpu_line, (out or "").splitlines()) if gpu is not None]
    mask = os.environ.get("CUDA_VISIBLE_DEVICES")
    if mask is not None and all(p.strip().isdigit() for p in mask.split(",") if p.strip()):
        allowed = {int(p) for p in mask.split(",") if p.strip()}
        gpus = [gpu for gpu in gpus if gpu.index in allowed]
    return gpus


def _nvidia_smi(query: str, *formats: str, timeout_s: float) -> str | None:
    """``nvidia-smi``'s CSV answer to ``query``, no header; ``None`` without a working one."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    form = ",".join(("csv", "noheader", *formats))
    try:
        done = subprocess.run(
            [exe, query, f"--format={form}"],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


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
    missing = [name for name in ("jax", "keras") if not importable(name)]
    if missing:
        verb = "is" if len(missing) == 1 else "are"
        raise MissingExtraError(
            f"{named('backend')} jax needs {' and '.join(missing)}, which {verb} not installed: "
            'pip install "mirrortuner[jax]"'
        )


def measure() -> dict[str, Any]:
    """The machine's load before this search's first child (:func:`tuner.core.plan.load_record`)."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # not every platform keeps one
        load = 0.0
    cores = os.cpu_count() or 1
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    return load_record(load, cores, gpu_processes(), stamp)


def gpu_processes() -> int:
    """Compute processes on the GPUs (none ours yet); 0 without a working ``nvidia-smi``."""
    out = _nvidia_smi("--query-compute-apps=pid", timeout_s=_NVIDIA_SMI_TIMEOUT_S) or ""
    pids = {line.strip() for line in out.splitlines() if line.strip().isdigit()}
    return len(pids - {str(os.getpid())})


def store_load(study: optuna.Study, record: dict[str, Any]) -> None:
    """Keep the study's busiest measurement (:func:`tuner.core.plan.busiest`)."""
    stored = storage_call(study, decode_study, study).machine_load
    kept = busiest(stored, record)
    if kept != stored:
        storage_call(study, store_study, study, MACHINE_LOAD, kept)
