"""Inside the child, under Keras on JAX: the run's devices, the CPU memory cap, device memory.

A CPU memory cap (``TUNER_CPU_MEMORY_CAP_BYTES``) is applied once JAX is up and the model built
(shared libraries map gigabytes of address space they never use), so that a training allocation
beyond it fails with XLA's ``RESOURCE_EXHAUSTED`` (an ``oom`` trial) instead of swapping.
"""

from __future__ import annotations

import os
import resource
from typing import Any

from tuner.core.devices import CPU_CAP_ENV, DevicePlan


def init_devices(plan: DevicePlan) -> list[Any]:
    """Start JAX on the plan's devices; ``RuntimeError`` when it sees fewer, or of another kind."""
    import jax

    devices = list(jax.devices())
    platform = devices[0].platform if devices else "none"
    if (platform == "cpu") != (plan.kind == "cpu"):
        raise RuntimeError(
            f"JAX runs on {platform}, the plan needs {plan.kind} devices: for GPUs install "
            'JAX\'s CUDA build (pip install "jax[cuda12]")'
        )
    if plan.hosts > 1:
        return _gang_devices(plan, devices)
    if len(devices) < plan.num_replicas:
        raise RuntimeError(
            f"JAX sees {len(devices)} device(s) ({devices[0].platform}), the plan needs "
            f"{plan.num_replicas}"
        )
    return devices[: plan.num_replicas]


def _gang_devices(plan: DevicePlan, devices: list[Any]) -> list[Any]:
    """Every device of the gang (``jax.devices()`` is global once the runtime is joined), all of
    them the run's: each host's own count must be the plan's, or the global batch would not
    split as the plan says."""
    import jax

    if len(devices) != plan.num_replicas or jax.local_device_count() != plan.local_replicas:
        raise RuntimeError(
            f"the gang's runtime sees {len(devices)} device(s), {jax.local_device_count()} on "
            f"this host; the plan ({plan.signature}) needs {plan.num_replicas}, "
            f"{plan.local_replicas} on each of {plan.hosts} hosts"
        )
    return devices


def apply_memory_cap(environ: dict[str, str] | None = None) -> int | None:
    """Cap the address space at what it is now plus ``TUNER_CPU_MEMORY_CAP_BYTES``, once JAX and
    the workload's imports are up (they do not count); the limit set, or ``None``."""
    value = (os.environ if environ is None else environ).get(CPU_CAP_ENV)
    if not value:
        return None
    if _applied:  # once per process: a later session (a probe's next size) keeps the first cap
        return _applied[0]
    _start_thread_pools()
    limit = address_space_bytes() + int(value)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    _applied.append(limit)
    return limit


_applied: list[int] = []
"""The address-space limit this process set, if any."""


def _start_thread_pools() -> None:
    """Run one small computation on every device first: XLA's CPU thread pools reserve their
    stacks and malloc arenas then, so the cap measures what training allocates."""
    import jax
    import jax.numpy as jnp

    for device in jax.local_devices():  # across hosts, only this process's are reachable
        jax.device_put(jnp.ones((8, 8)), device).sum().block_until_ready()


def address_space_bytes() -> int:
    """This process's virtual address space now (``/proc/self/statm``'s first field)."""
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[0])
    return pages * os.sysconf("SC_PAGE_SIZE")


def device_kind(devices: list[Any]) -> str:
    """The first device's kind: ``cpu`` on the host, the GPU's name (``NVIDIA H200``) on one."""
    return str(devices[0].device_kind)


def batch_sharding(devices: list[Any]) -> Any:
    """A global batch split over ``devices`` along its first axis, as ``DataParallel`` does."""
    import jax
    import numpy as np

    mesh = jax.sharding.Mesh(np.array(devices), ("batch",))
    return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("batch"))
