"""Inside the child, under Keras on JAX: the ``fit`` loop under ``keras.distribution.DataParallel``
(the model built while it is set: its variables replicated, every global batch split)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from tuner.core.errors import WorkloadError
from tuner.worker import compiled
from tuner.worker.backends.jax import _evidence as evidence
from tuner.worker.backends.jax import _gang as gang
from tuner.worker.callbacks import OnEpoch, OnStep, fit_callbacks


class JaxFitLoop:
    """Keras ``fit`` over global NumPy batches, on every device of the distribution."""

    def __init__(
        self,
        devices: list[Any],
        build: Callable[[], Any],
        compile_args: Callable[[], dict[str, Any]],
        reduction: str,
        record_steps: bool,
        share: gang.Share | None = None,
    ) -> None:
        """``share``: across hosts, this process's rows of every global batch the loop is given
        (it is given the global batches, as on one host: what validation fixes and digests)."""
        self._share = share or gang.Share()
        hosts = self._share.hosts
        self.devices = [str(device) for device in devices]
        self._lockstep = gang.in_lockstep(devices, hosts)
        self.step_losses: list[float] = []
        self._record_steps = record_steps
        self._hosts = hosts
        self.model = build()
        args = compile_args()
        if reduction == "replica-mean":
            args["loss"] = evidence.replica_mean_loss(args["loss"], len(devices))
        compiled.compile_model(self.model, args)
        # Validation counts each device's examples; a trial does not pay for it.
        self._counter = evidence.ShardCounter(hosts=hosts) if record_steps else None

    def run(
        self,
        data: Iterator[Any],
        epochs: int,
        steps: int | None,
        on_epoch: OnEpoch,
        on_step: OnStep | None = None,
    ) -> None:
        """Train ``epochs`` epochs of ``steps`` steps from the endless stream ``data``."""
        if steps is None:
            raise WorkloadError("under JAX a run trains a known number of steps per window")
        recorded = self.step_losses if self._record_steps else None  # a sync per step
        data = self._share.batches(data)
        stream = self._counter.wrap(data) if self._counter is not None else data
        self.model.fit(
            stream,
            epochs=epochs,
            steps_per_epoch=steps,
            verbose=0,
            callbacks=[
                *fit_callbacks(gang.agreed(on_epoch, self._hosts), on_step, recorded),
                *self._lockstep,
            ],
        )

    def learning_rate(self) -> float:
        """The learning rate the optimizer actually holds."""
        return float(np.asarray(self.model.optimizer.learning_rate))

    def replica_examples(self) -> list[int]:
        """Examples each device received (counted in validation runs only); across hosts every
        host's devices, gathered in rank order (a collective: every rank calls it)."""
        local = self._counter.per_device() if self._counter is not None else []
        if self._hosts == 1 or not local:
            return local
        from jax.experimental import multihost_utils

        every = multihost_utils.process_allgather(np.asarray(local, dtype=np.int64))
        return [int(n) for n in np.asarray(every).reshape(-1)]

    def variable_copies(self) -> list[list[np.ndarray]]:
        """Per variable (weights and optimizer slots), each device's copy."""
        return evidence.variable_copies(self.model, self._hosts)

    def variable_devices(self) -> list[str]:
        """The devices that hold the model's weights."""
        return evidence.variable_devices(self.model)
