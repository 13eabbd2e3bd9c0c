"""Devices to strategy: configure TensorFlow's devices from a plan, then build the strategy."""

from __future__ import annotations

from typing import Any

from tuner.core.devices import DevicePlan


def build_strategy(plan: DevicePlan) -> Any:
    """Inside the child: configure TensorFlow's devices and return a ``MirroredStrategy``.

    Must run before TensorFlow initialises its devices (the first op).
    """
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
    return tf.distribute.MirroredStrategy(plan.device_names)
