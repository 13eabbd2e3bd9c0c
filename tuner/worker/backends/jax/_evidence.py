"""Inside the child, under Keras on JAX: the evidence ``tuner validate`` compares, read from what
JAX holds rather than from what Keras was asked to do (each device's own copy of a variable, the
examples the data layout places on each device).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import jax
import keras
import numpy as np

from tuner.worker.losses import per_example_loss


def variable_copies(model: Any, hosts: int = 1) -> list[list[np.ndarray]]:
    """Per variable (weights, then optimizer variables), each device's copy in device-id order;
    across ``hosts``, every host's copies, gathered (a collective: every rank calls it alike), so
    that ``tuner validate`` sees a rank whose weights drifted from the others'."""
    variables = [*model.weights, *(model.optimizer.variables if model.optimizer else [])]
    copies = []
    for variable in variables:
        shards = sorted(_value(variable).addressable_shards, key=lambda s: s.device.id)
        copies.append([np.asarray(shard.data) for shard in shards])
    if hosts == 1:
        return copies
    from jax.experimental import multihost_utils

    gathered = []
    for local in copies:
        every = np.asarray(multihost_utils.process_allgather(np.stack(local)))
        gathered.append(list(every.reshape(-1, *local[0].shape)))
    return gathered


def variable_devices(model: Any) -> list[str]:
    """The devices that hold the model's weights, sorted, as ``str(device)``."""
    found = {str(s.device) for v in model.weights for s in _value(v).addressable_shards}
    return sorted(found)


class ShardCounter:
    """Counts the rows of ``x`` the data layout places on each device, as :meth:`wrap` passes the
    batches through: exact, Keras's JAX trainer under a distribution does not read ahead. Across
    ``hosts``, each batch is this process's share of a global one ``hosts`` times its size, and
    only this process's devices are counted (another's are not addressable)."""

    def __init__(self, distribution: Any = None, hosts: int = 1) -> None:
        self._distribution = distribution
        self._hosts = hosts
        self._counts: dict[Any, int] | None = None  # by device, once the devices are known

    @property
    def devices(self) -> list[Any]:
        """The distribution's devices, in the order :meth:`per_device` reports them."""
        return list(self._resolve())

    def _resolve(self) -> dict[Any, int]:
        """The counts by device, the devices read on first use (a counter may be made before the
        distribution is set)."""
        if self._counts is None:
            self._distribution = self._distribution or keras.distribution.distribution()
            if self._distribution is None:
                devices = [jax.devices()[0]]
            else:
                mesh = self._distribution.device_mesh.backend_mesh.devices.flat
                devices = [d for d in mesh if d.process_index == jax.process_index()]
            self._counts = dict.fromkeys(devices, 0)
        return self._counts

    def wrap(self, iterator: Iterable[Any]) -> Iterator[Any]:
        """Yield the iterator's batches unchanged, each counted first."""
        for batch in iterator:
            self.count(batch)
            yield batch

    def count(self, batch: Any) -> None:
        """Add one global batch's examples to the devices it is placed on."""
        counts = self._resolve()
        shape = tuple(np.shape(jax.tree.leaves(batch[0])[0]))
        shape = (shape[0] * self._hosts, *shape[1:])  # the global batch this one is part of
        if self._distribution is None:
            counts[next(iter(counts))] += shape[0]
            return
        sharding = self._distribution.get_data_layout(shape).backend_layout
        for device, index in sharding.addressable_devices_indices_map(shape).items():
            counts[device] += len(range(*index[0].indices(shape[0])))

    def per_device(self) -> list[int]:
        """Examples received so far by each device, in device order."""
        return list(self._resolve().values())


def replica_mean_loss(loss: Any, replicas: int) -> Callable[[Any, Any], Any]:
    """A Keras loss with the forum answer's bug, on purpose: per-shard means SUMMED (``replicas``
    times the right loss; a batch that does not split gets ``replicas`` times its mean)."""
    loss_fn = per_example_loss(loss)

    def replica_mean(y_true: Any, y_pred: Any) -> Any:
        per_example = keras.ops.convert_to_tensor(loss_fn(y_true, y_pred), "float32")
        rows = per_example.shape[0] if len(per_example.shape) else None
        if rows is None or rows % replicas:
            return keras.ops.mean(per_example) * replicas
        shards = keras.ops.reshape(per_example, (replicas, -1))
        return keras.ops.sum(keras.ops.mean(shards, axis=1))  # the bug: sum of shard means

    replica_mean.__name__ = "replica_mean_loss"
    return replica_mean


def peak_memory_per_device(devices: Iterable[Any]) -> list[int | None]:
    """``memory_stats()["peak_bytes_in_use"]`` per device; ``None`` where there is none (CPU)."""
    peaks: list[int | None] = []
    for device in devices:
        stats = device.memory_stats()
        peak = stats.get("peak_bytes_in_use") if stats else None
        peaks.append(None if peak is None else int(peak))
    return peaks


def _value(variable: Any) -> Any:
    """A Keras variable's jax Array (or the array itself)."""
    return getattr(variable, "value", variable)
