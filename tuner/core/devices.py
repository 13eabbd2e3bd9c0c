"""Which devices a trial uses: parsing ``--gpus`` / ``--cpu-replicas`` / ``--memory-limit`` in the
parent (no TensorFlow), and turning the resulting :class:`DevicePlan` into environment variables and
a ``MirroredStrategy`` inside the child.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace
from typing import Any

from tuner.core.errors import ConfigError

DEFAULT_CPU_REPLICAS = 2

_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
}


@dataclass(frozen=True)
class GpuInfo:
    """One GPU as ``nvidia-smi`` reports it."""

    index: int
    name: str


@dataclass(frozen=True)
class DevicePlan:
    """The devices of one trial: ``kind`` is ``"gpu"`` or ``"cpu"``."""

    kind: str
    num_replicas: int
    gpu_indices: tuple[int, ...] = ()
    gpu_names: tuple[str, ...] = ()
    memory_limit_bytes: int | None = None

    @property
    def device_names(self) -> list[str]:
        """TensorFlow's names of the replica devices inside the child."""
        return [f"/{self.kind}:{i}" for i in range(self.num_replicas)]

    @property
    def model(self) -> str:
        """The device model, e.g. ``NVIDIA H200``, or ``cpu``; mixed models are all named
        (``NVIDIA A100 + NVIDIA H100``), since they are not comparable with either."""
        if not self.gpu_names:
            return self.kind
        return " + ".join(dict.fromkeys(self.gpu_names))

    @property
    def signature(self) -> str:
        """Replica count and device model, e.g. ``2x NVIDIA H200`` or ``2x cpu``."""
        return f"{self.num_replicas}x {self.model}"

    @property
    def device_signature(self) -> str:
        """Devices and memory cap: OOM knowledge and throughput carry over only within one
        signature, e.g. ``2x cpu, cap 512 MiB per device``."""
        if self.memory_limit_bytes is None:
            return self.signature
        return f"{self.signature}, cap {self.memory_limit_bytes // 2**20} MiB per device"

    def single_device(self) -> DevicePlan:
        """The same plan on its first device only (the one-device reference run)."""
        return replace(
            self,
            num_replicas=1,
            gpu_indices=self.gpu_indices[:1],
            gpu_names=self.gpu_names[:1],
        )

    def child_environment(self) -> dict[str, str]:
        """Environment variables the child needs before TensorFlow is imported."""
        env = {"TF_CPP_MIN_LOG_LEVEL": "2"}
        if self.kind == "gpu":
            env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"  # the order nvidia-smi numbers them in
            env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in self.gpu_indices)
        else:
            env["CUDA_VISIBLE_DEVICES"] = ""
            env["TF_ENABLE_ONEDNN_OPTS"] = "1"
            if self.memory_limit_bytes is not None:
                # All logical CPU devices share one host allocator: cap it at limit × replicas.
                env["TF_MKL_ALLOC_MAX_BYTES"] = str(self.memory_limit_bytes * self.num_replicas)
        return env

    def to_dict(self) -> dict[str, Any]:
        """Plain data, to cross the process boundary."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DevicePlan:
        """Inverse of :meth:`to_dict`."""
        return cls(
            kind=data["kind"],
            num_replicas=int(data["num_replicas"]),
            gpu_indices=tuple(data["gpu_indices"]),
            gpu_names=tuple(data["gpu_names"]),
            memory_limit_bytes=data["memory_limit_bytes"],
        )


def parse_size(text: str) -> int:
    """Parse a memory size such as ``512MiB``, ``14GiB``, ``1.5GB`` or ``1048576`` into bytes."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", text)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _UNITS:
        raise ConfigError(
            f"--memory-limit must be a size such as 512MiB, 14GiB or 2GB, got {text!r}"
        )
    size = int(float(match.group(1)) * _UNITS[unit])
    if size < 2**20:
        raise ConfigError(f"--memory-limit must be at least 1MiB, got {text!r}")
    return size


def parse_gpus(text: str) -> tuple[int, ...]:
    """Parse ``--gpus`` (``"0,1"``) into distinct non-negative indices."""
    parts = [part.strip() for part in text.split(",")]
    if not text.strip() or not all(re.fullmatch(r"\d+", part) for part in parts):
        raise ConfigError(f"--gpus must be comma-separated GPU indices such as 0,1, got {text!r}")
    indices = tuple(int(part) for part in parts)
    if len(set(indices)) != len(indices):
        raise ConfigError(f"--gpus names a GPU more than once: {text!r}")
    return indices


def choose_devices(
    gpus: str | None,
    cpu_replicas: int | None,
    memory_limit: str | None,
    available: list[GpuInfo],
) -> tuple[DevicePlan, str | None]:
    """Decide the devices of a run; returns the plan and a notice for the user, if any.

    ``available`` are the GPUs the machine shows. No GPU and no ``--gpus``: two CPU replicas.
    """
    limit = parse_size(memory_limit) if memory_limit is not None else None
    if gpus is not None and cpu_replicas is not None:
        raise ConfigError("give either --gpus or --cpu-replicas, not both")
    if cpu_replicas is not None:
        if cpu_replicas < 1:
            raise ConfigError(f"--cpu-replicas must be at least 1, got {cpu_replicas}")
        return DevicePlan("cpu", cpu_replicas, memory_limit_bytes=limit), None
    found = available
    if gpus is None:
        if not found:
            notice = (
                f"No GPU visible: running on {DEFAULT_CPU_REPLICAS} logical CPU replicas; "
                "throughput is not representative of GPUs."
            )
            return DevicePlan("cpu", DEFAULT_CPU_REPLICAS, memory_limit_bytes=limit), notice
        chosen = found
    else:
        indices = parse_gpus(gpus)
        by_index = {gpu.index: gpu for gpu in found}
        missing = [i for i in indices if i not in by_index]
        if missing:
            shown = ", ".join(f"{g.index} ({g.name})" for g in found) or "none"
            raise ConfigError(
                f"--gpus names GPU {missing[0]}, which is not present; visible GPUs: {shown}"
                + ("" if found else " (use --cpu-replicas N to run on CPU replicas)")
            )
        chosen = [by_index[i] for i in indices]
    return (
        DevicePlan(
            "gpu",
            len(chosen),
            gpu_indices=tuple(g.index for g in chosen),
            gpu_names=tuple(g.name for g in chosen),
            memory_limit_bytes=limit,
        ),
        None,
    )
