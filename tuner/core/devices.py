"""Which devices a trial uses: ``--gpus`` / ``--cpu-replicas`` / ``--memory-limit`` parsed in the
parent, and the :class:`DevicePlan` as the environment a child needs before its backend starts.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from tuner.core.errors import ConfigError
from tuner.core.options import named

DEFAULT_CPU_REPLICAS = 2
JAX_BACKEND = "jax"
TENSORFLOW_BACKEND = "tensorflow"
HOST_DEVICE_FLAG = "--xla_force_host_platform_device_count"
"""The XLA flag that splits the host CPU into N devices (JAX's ``--cpu-replicas``)."""
CPU_CAP_ENV = "TUNER_CPU_MEMORY_CAP_BYTES"
"""The host memory cap of a JAX CPU child (limit × replicas; the child applies it as
``RLIMIT_AS``): XLA's CPU client has no allocator cap of its own."""

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
    memory_bytes: int | None = None
    """``memory.total``, where reported: a JAX memory cap is a fraction of it."""


@dataclass(frozen=True)
class DevicePlan:
    """The devices of one trial: ``kind`` ``gpu`` or ``cpu``, run by the Keras ``backend``."""

    kind: str
    num_replicas: int
    gpu_indices: tuple[int, ...] = ()
    gpu_names: tuple[str, ...] = ()
    memory_limit_bytes: int | None = None
    backend: str = TENSORFLOW_BACKEND
    gpu_memory_bytes: tuple[int | None, ...] = ()
    """Each chosen GPU's total memory (``None`` where ``nvidia-smi`` did not say)."""
    hosts: int = 1
    """Hosts the trial spans (:mod:`tuner.core.gang`): ``num_replicas`` counts the devices of all
    of them, each host's are ``local_replicas`` (its GPUs as this host's are chosen)."""

    @property
    def local_replicas(self) -> int:
        """The devices of one host."""
        return self.num_replicas // self.hosts

    def across(self, hosts: int) -> DevicePlan:
        """This host's plan on ``hosts`` hosts like it."""
        return replace(self, hosts=hosts, num_replicas=self.local_replicas * hosts)

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
        """Devices per host, their model and, under JAX, the backend: ``2x NVIDIA H200``,
        ``2x cpu``, ``2x cpu, jax``, across hosts ``2 hosts × 2x cpu, jax``. TensorFlow's
        signatures are those stored studies hold."""
        found = f"{self.local_replicas}x {self.model}"
        if self.hosts > 1:
            found = f"{self.hosts} hosts × {found}"
        return found if self.backend == TENSORFLOW_BACKEND else f"{found}, {self.backend}"

    @property
    def device_signature(self) -> str:
        """Devices and cap (``2x cpu, cap 512 MiB per device``): what OOMs and speeds hold for."""
        if self.memory_limit_bytes is None:
            return self.signature
        return f"{self.signature}, cap {self.memory_limit_bytes // 2**20} MiB per device"

    def single_device(self) -> DevicePlan:
        """The same plan on its first device only (the one-device reference run)."""
        return replace(
            self,
            num_replicas=1,
            hosts=1,
            gpu_indices=self.gpu_indices[:1],
            gpu_names=self.gpu_names[:1],
            gpu_memory_bytes=self.gpu_memory_bytes[:1],
        )

    def baseline_plan(self) -> DevicePlan:
        """What a speedup is measured against: one device, or for a gang one host's devices
        (run at the gang's batch per device: :func:`baseline_batch`)."""
        if self.hosts == 1:
            return self.single_device()
        return replace(self, hosts=1, num_replicas=self.local_replicas)

    def baseline_batch(self, batch: int) -> int:
        """The global batch of the baseline that matches ``batch`` on this plan: ``batch`` on one
        device (as stored studies measured it); for a gang, one host's share of it."""
        return batch if self.hosts == 1 else batch // self.hosts

    def child_environment(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """Environment variables the child needs before its backend is imported; under JAX the
        ``XLA_FLAGS`` of ``environ`` (the child's inherited one, default this process's) kept."""
        # A user's KERAS_BACKEND (or ~/.keras/keras.json) must not put Keras on another backend.
        env = {"KERAS_BACKEND": self.backend, "TF_CPP_MIN_LOG_LEVEL": "2"}
        if self.kind == "gpu":
            env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"  # the order nvidia-smi numbers them in
            env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in self.gpu_indices)
        else:
            env["CUDA_VISIBLE_DEVICES"] = ""
        if self.backend == JAX_BACKEND:
            return env | self._jax_environment(os.environ if environ is None else environ)
        if self.kind != "gpu":
            env["TF_ENABLE_ONEDNN_OPTS"] = "1"
            if self.memory_limit_bytes is not None:
                # All logical CPU devices share one host allocator: cap it at limit × replicas.
                env["TF_MKL_ALLOC_MAX_BYTES"] = str(self.memory_limit_bytes * self.local_replicas)
        return env

    def _jax_environment(self, environ: Mapping[str, str]) -> dict[str, str]:
        if self.kind == "gpu":
            env = {"JAX_PLATFORMS": "cuda"}  # never a silent fallback to the CPU
            if self.memory_limit_bytes is None:
                # Allocate as needed, so that the peak of memory_stats() is the run's own.
                env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
            else:
                env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "true"
                env["XLA_PYTHON_CLIENT_MEM_FRACTION"] = repr(self.memory_fraction())
                env["XLA_CLIENT_MEM_FRACTION"] = ""  # its newer name: both set is an error
            return env
        flags = host_device_flags(environ.get("XLA_FLAGS", ""), self.local_replicas)
        env = {"JAX_PLATFORMS": "cpu", "XLA_FLAGS": flags}
        if self.memory_limit_bytes is not None:
            # All host devices share one process: cap it at limit × replicas.
            env[CPU_CAP_ENV] = str(self.memory_limit_bytes * self.local_replicas)
            # Each thread's malloc arena reserves up to 64 MiB of address space: few arenas, so
            # the cap measures allocations rather than the host's core count.
            env["MALLOC_ARENA_MAX"] = "2"
        return env

    def memory_fraction(self) -> float:
        """The cap as XLA's GPU allocator takes it: a fraction of each GPU's total memory (of
        the largest, when models differ, so that no device holds more than the cap). Raises
        :class:`ConfigError` when there is no cap or a GPU's total memory is unknown."""
        known = [m for m in self.gpu_memory_bytes if m]
        if self.memory_limit_bytes is None or not known or len(known) < len(self.gpu_indices):
            raise ConfigError(
                f"{named('memory_limit')} under {named('backend')} jax is a fraction of the GPU's "
                "memory, and nvidia-smi did not report memory.total for the chosen GPUs"
            )
        return min(1.0, self.memory_limit_bytes / max(known))

    def to_dict(self) -> dict[str, Any]:
        """Plain data (a reuse key holds it; one host's as before hosts were counted)."""
        found = asdict(self)
        if self.hosts == 1:
            del found["hosts"]
        return found


def hosts_in(signature: str) -> int:
    """The hosts a device signature names (``2 hosts × 2x cpu, jax`` -> 2; one host: 1)."""
    match = re.match(r"(\d+) hosts × ", signature)
    return int(match.group(1)) if match else 1


def inspect_environment(backend: str) -> dict[str, str]:
    """The workload check's environment: one CPU device (not split under JAX), no GPU."""
    env = {"CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "2"}
    if backend == JAX_BACKEND:
        return env | {"KERAS_BACKEND": JAX_BACKEND, "JAX_PLATFORMS": "cpu"}
    return env | {"KERAS_BACKEND": TENSORFLOW_BACKEND}


def host_device_flags(inherited: str, count: int) -> str:
    """The inherited ``XLA_FLAGS`` with the host split into ``count`` devices (one such flag)."""
    kept = [flag for flag in inherited.split() if not flag.startswith(HOST_DEVICE_FLAG)]
    return " ".join([*kept, f"{HOST_DEVICE_FLAG}={count}"])


def parse_size(text: str) -> int:
    """Parse a memory size such as ``512MiB``, ``14GiB``, ``1.5GB`` or ``1048576`` into bytes."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", text)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _UNITS:
        raise ConfigError(
            f"{named('memory_limit')} must be a size such as 512MiB, 14GiB or 2GB, got {text!r}"
        )
    size = int(float(match.group(1)) * _UNITS[unit])
    if size < 2**20:
        raise ConfigError(f"{named('memory_limit')} must be at least 1MiB, got {text!r}")
    return size


def parse_gpus(text: str) -> tuple[int, ...]:
    """Parse ``--gpus`` (``"0,1"``) into distinct non-negative indices."""
    parts = [part.strip() for part in text.split(",")]
    if not text.strip() or not all(re.fullmatch(r"\d+", part) for part in parts):
        raise ConfigError(
            f"{named('gpus')} must be comma-separated GPU indices such as 0,1, got {text!r}"
        )
    indices = tuple(int(part) for part in parts)
    if len(set(indices)) != len(indices):
        raise ConfigError(f"{named('gpus')} names a GPU more than once: {text!r}")
    return indices


def choose_devices(
    gpus: str | None,
    cpu_replicas: int | None,
    memory_limit: str | None,
    available: list[GpuInfo],
    backend: str = TENSORFLOW_BACKEND,
) -> tuple[DevicePlan, str | None]:
    """The devices of a run and a notice, if any (no GPU and no ``--gpus``: 2 CPU replicas)."""
    limit = parse_size(memory_limit) if memory_limit is not None else None
    if gpus is not None and cpu_replicas is not None:
        raise ConfigError(f"give either {named('gpus')} or {named('cpu_replicas')}, not both")
    if cpu_replicas is not None:
        if cpu_replicas < 1:
            raise ConfigError(f"{named('cpu_replicas')} must be at least 1, got {cpu_replicas}")
        return DevicePlan("cpu", cpu_replicas, memory_limit_bytes=limit, backend=backend), None
    if gpus is None and not available:
        notice = (
            f"No GPU visible: running on {DEFAULT_CPU_REPLICAS} logical CPU replicas; "
            "throughput is not representative of GPUs."
        )
        plan = DevicePlan("cpu", DEFAULT_CPU_REPLICAS, memory_limit_bytes=limit, backend=backend)
        return plan, notice
    chosen = available if gpus is None else _named_gpus(gpus, available)
    plan = DevicePlan(
        "gpu",
        len(chosen),
        gpu_indices=tuple(g.index for g in chosen),
        gpu_names=tuple(g.name for g in chosen),
        memory_limit_bytes=limit,
        backend=backend,
        gpu_memory_bytes=tuple(g.memory_bytes for g in chosen),
    )
    if backend == JAX_BACKEND and limit is not None:
        plan.memory_fraction()  # refuses a cap it cannot express, before anything runs
    return plan, None


def _named_gpus(gpus: str, found: list[GpuInfo]) -> list[GpuInfo]:
    """The GPUs ``--gpus`` names, in its order; a missing one is bad input."""
    indices = parse_gpus(gpus)
    by_index = {gpu.index: gpu for gpu in found}
    missing = [i for i in indices if i not in by_index]
    if missing:
        shown = ", ".join(f"{g.index} ({g.name})" for g in found) or "none"
        raise ConfigError(
            f"{named('gpus')} names GPU {missing[0]}, which is not present; visible GPUs: {shown}"
            + ("" if found else f" (use {named('cpu_replicas')} N to run on CPU replicas)")
        )
    return [by_index[i] for i in indices]
