"""A JAX out-of-memory on two host devices, waited for 10 s rather than a minute.

When one host device runs out of memory, the other waits in the step's all-reduce until XLA gives
up on the rendezvous and aborts the child (SIGABRT under the cap, which tuner reads as an
out-of-memory). XLA waits 20 s before it warns of a stuck rendezvous, then 40 s more before it
aborts (measured here: the out-of-memory trial took 63 s); 5 s + 5 s is ample for two devices of
one process to meet (a healthy step's all-reduce waits milliseconds). tuner keeps the inherited
``XLA_FLAGS`` for its JAX children (:func:`tuner.core.devices.host_device_flags`)."""

from __future__ import annotations

import os

COLLECTIVE_TIMEOUTS = (
    "--xla_cpu_collective_call_warn_stuck_timeout_seconds=5",
    "--xla_cpu_collective_call_terminate_timeout_seconds=5",
)


def xla_flags() -> str:
    """This process's ``XLA_FLAGS`` with :data:`COLLECTIVE_TIMEOUTS` added."""
    return " ".join([os.environ.get("XLA_FLAGS", ""), *COLLECTIVE_TIMEOUTS]).strip()
