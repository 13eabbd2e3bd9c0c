"""Inside the child, under Keras on JAX: a run across hosts (:mod:`tuner.core.gang`) — this
process joins the trial's JAX distributed runtime, and feeds its share of every global batch.

Each rank's child reads the same global NumPy batches (:mod:`._inputs`) and feeds its ``1/hosts``
rows of each: Keras's JAX trainer turns what every process feeds into one global array
(``jax.make_array_from_process_local_data``), so rank ``r``'s rows ``[r·G/h, (r+1)·G/h)`` put the
same global batch on the same devices as one host feeding all ``G``. Evaluation is fed alike:
the same global batches, hence the same loss, as on one host (:meth:`Share.rows`).

The child's environment needs nothing more than one host's (``DevicePlan.child_environment``
already splits this host into its ``local_replicas`` CPU devices): the gang's address, size and
rank come in the request's seat, and gloo is chosen here, in the process, before JAX starts.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import keras
import numpy as np

from tuner.core.protocol import RunRequest
from tuner.worker.backends.jax._inputs import Batch, length, slice_batch
from tuner.worker.callbacks import OnEpoch
from tuner.worker.sources import map_leaves

HEARTBEAT_S = 10
"""How long the runtime waits for a silent peer before it ends every rank (it aborts them): a
rank that died must not leave the others waiting in a collective. Measured: a peer SIGKILLed,
the other rank aborts ~8 s later."""
SHUTDOWN_S = 30
"""How long a rank that finished waits for the others to finish too before it exits."""
LOCKSTEP = ("ok", "diverged", "dominated")
"""Results every rank reaches together (they decide from the same global loss): those ranks
leave the runtime in step; after any other, a rank exits at once."""


@dataclass(frozen=True)
class Share:
    """This process's share of every global batch: rank ``rank`` of ``hosts``."""

    rank: int = 0
    hosts: int = 1

    def local_batch(self, global_batch: int) -> int:
        """Rows this rank feeds of a global batch of ``global_batch``."""
        if global_batch % self.hosts:
            raise ValueError(
                f"a global batch of {global_batch} does not split over {self.hosts} hosts"
            )
        return global_batch // self.hosts

    def batches(self, batches: Iterator[Batch]) -> Iterator[Batch]:
        """This rank's rows of each global batch of ``batches``."""
        if self.hosts == 1:
            return batches
        return (self.rows(batch, length(batch)) for batch in batches)

    def rows(self, batch: Batch, global_batch: int) -> Batch:
        """This rank's rows of ``batch`` read as consecutive global batches of ``global_batch``
        (the last may be shorter): of each, its ``rank``-th ``1/hosts``, joined in order. Fed
        at :meth:`local_batch`, every rank together makes the global batches one host feeds."""
        if self.hosts == 1:
            return batch
        total = length(batch)
        if total <= global_batch:
            size = self.local_batch(total)
            return slice_batch(batch, self.rank * size, (self.rank + 1) * size)
        index = []
        for start in range(0, total, global_batch):
            size = self.local_batch(min(global_batch, total - start))
            index.append(np.arange(start + self.rank * size, start + (self.rank + 1) * size))
        rows = np.concatenate(index)
        return tuple(map_leaves(lambda array: np.asarray(array)[rows], part) for part in batch)


class LockStep(keras.callbacks.Callback):
    """One training step (one evaluation batch) in flight at a time: its batch-end hook, being
    Keras's own code no longer, makes Keras turn each step's logs into numbers before the next
    step is dispatched. Across hosts on the CPU, Keras's asynchronous dispatch of many steps
    deadlocks XLA's gloo collectives: measured here, 2 processes × 2 CPU devices, Keras 3.15.1
    and JAX 0.10.2, plain ``fit`` stalled for good (no CPU used) within 3,000 steps, 1 run of 1,
    and passed 3 runs of 3 with a sync per step, at 88-105 steps/s against 99 unsynced."""

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        return None

    def on_test_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        return None


def in_lockstep(devices: list[Any], hosts: int) -> list[Any]:
    """The callbacks a ``fit`` or ``evaluate`` needs on ``devices``: :class:`LockStep` across
    hosts on the CPU (GPUs' collectives are NCCL's, not seen to stall: their dispatch is kept)."""
    return [LockStep()] if hosts > 1 and devices and devices[0].platform == "cpu" else []


def agreed(on_epoch: OnEpoch, hosts: int) -> OnEpoch:
    """``on_epoch`` handed rank 0's window seconds on every rank (one small collective a window):
    what a window's end decides from its time — the time-to-target early stop — must be decided
    alike by every rank, or one would stop while the others wait for it in the next step. The
    losses are the same everywhere already (computed on the global arrays)."""
    if hosts == 1:
        return on_epoch
    from jax.experimental import multihost_utils

    def on_rank0_seconds(epoch: int, loss: float, seconds: float) -> bool:
        seconds = float(multihost_utils.broadcast_one_to_all(np.float32(seconds)))
        return on_epoch(epoch, loss, seconds)

    return on_rank0_seconds


def share(request: RunRequest) -> Share:
    """The request's share: all of it, unless it is one rank of a gang."""
    seat = request.gang
    return Share() if seat is None else Share(seat.process_id, request.plan.hosts)


_joined: list[object] = []
"""The seat this process joined the runtime at (once per process: a probe's sizes share it)."""


def join(request: RunRequest) -> None:
    """Join the request's gang's JAX distributed runtime (rank 0's child serves it at the
    seat's address), before anything starts JAX's devices; nothing without a seat. Raises
    ``RuntimeError`` in a process whose devices JAX started already: a warm child that ran
    something cannot join (the driver sends a gang's runs to fresh children)."""
    seat = request.gang
    if seat is None:
        return
    if _joined:
        if _joined[0] != seat:
            raise RuntimeError(f"this child joined a gang at {_joined[0]}, not {seat}")
        return
    import jax
    from jax._src import xla_bridge

    if xla_bridge.backends_are_initialized():
        raise RuntimeError(
            "a run across hosts needs a fresh child: JAX's devices were started in this process "
            "before it could join the gang's distributed runtime"
        )
    if request.plan.kind == "cpu":
        # Host devices of several processes meet in collectives only through gloo.
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=seat.address,
        num_processes=request.plan.hosts,
        process_id=seat.process_id,
        cluster_detection_method="deactivate",  # the seat says it all: no launcher guessed
        initialization_timeout=max(1, int(seat.join_timeout_s)),
        heartbeat_timeout_seconds=HEARTBEAT_S,
        shutdown_timeout_seconds=SHUTDOWN_S,
    )
    _joined.append(seat)


def leave_gang(status: str) -> None:
    """Leave the runtime before the process exits, its result written: after a result every
    rank reached (:data:`LOCKSTEP`), wait (at most :data:`SHUTDOWN_S`) for the others to leave
    too, so that rank 0, which serves the runtime, does not end it under a rank still writing
    its result; after any other, leave at once (the others may be stuck in a collective)."""
    if not _joined or status not in LOCKSTEP:
        return
    import jax

    def shut_down() -> None:
        # A peer gone: the result is written, the process exits anyway.
        with contextlib.suppress(Exception):
            jax.distributed.shutdown()

    thread = threading.Thread(target=shut_down, name="tuner-gang-leave", daemon=True)
    thread.start()
    thread.join(SHUTDOWN_S + 5)
