"""Devices to strategy: TensorFlow's devices configured from a plan, and what they tell of
themselves."""

from __future__ import annotations

from typing import Any

from tuner.core.devices import DevicePlan

_configured: list[DevicePlan] = []
"""The plan this process's devices were configured for: TensorFlow takes device options only
before its first op, so a probe of several sizes configures them once."""


def build_strategy(plan: DevicePlan) -> Any:
    """Configure TensorFlow's devices (once per process) and return a ``MirroredStrategy``."""
    import tensorflow as tf

    if not _configured:
        _configure_devices(plan)
        _configured.append(plan)
    elif _configured[0] != plan:
        raise RuntimeError("this process's devices are configured for another plan")
    return tf.distribute.MirroredStrategy(plan.device_names)


def _configure_devices(plan: DevicePlan) -> None:
    import tensorflow as tf

    if plan.kind == "cpu":
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(plan.num_replicas)]
        )
    else:
        for gpu in tf.config.list_physical_devices("GPU"):
            if plan.memory_limit_bytes is not None:
                megabytes = max(1, plan.memory_limit_bytes // 2**20)
                tf.config.set_logical_device_configuration(
                    gpu, [tf.config.LogicalDeviceConfiguration(memory_limit=megabytes)]
                )
            else:
                tf.config.experimental.set_memory_growth(gpu, True)


def peak_memory_per_device(plan: DevicePlan) -> list[int | None]:
    """Peak bytes per replica device (GPUs only; ``None`` where TensorFlow cannot tell)."""
    import tensorflow as tf

    if plan.kind != "gpu":
        return [None] * plan.num_replicas
    peaks: list[int | None] = []
    for i in range(plan.num_replicas):
        try:
            peaks.append(int(tf.config.experimental.get_memory_info(f"GPU:{i}")["peak"]))
        except (ValueError, RuntimeError):
            peaks.append(None)
    return peaks


def gpu_name() -> str:
    """The first visible GPU's name as TensorFlow reports it (``gpu`` when it cannot tell)."""
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    details = tf.config.experimental.get_device_details(gpus[0]) if gpus else {}
    return str(details.get("device_name", "gpu"))
