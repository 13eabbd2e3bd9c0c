"""Inside the child: the training loops a trial can use, behind one small interface: ``fit``
(the default), ``custom`` and ``cpu-update`` (each, and why not ``fit`` under
``CentralStorageStrategy``: docs/guide/validate.md). ``reduction="replica-mean"`` reproduces the
forum answer's bug on purpose. Every loop counts the examples each replica processed inside its
own step: the evidence that every device did its share.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import tensorflow as tf

from tuner.core.errors import WorkloadError
from tuner.core.spec import LOOP_KINDS
from tuner.worker import compiled
from tuner.worker.backends.tensorflow._symbolic import build_from_local_batch
from tuner.worker.callbacks import OnEpoch, OnStep, fit_callbacks
from tuner.worker.losses import call_model, model_loss, unpack


class _Base:
    """What every loop records: per-step losses and per-replica example counts."""

    def __init__(
        self,
        devices: list[str],
        place: Callable[[], Any],
        build: Callable[[], Any],
        compile_args: Callable[[], dict[str, Any]],
        build_optimizer: bool = True,
    ) -> None:
        """``place()``: where the model's variables are made (a strategy's scope, a device)."""
        self.devices = devices
        self.step_losses: list[float] = []
        self._place = place
        with place():
            self.model = build()
            compiled.compile_model(self.model, compile_args())
            if build_optimizer:
                self.model.optimizer.build(self.model.trainable_variables)
        self._examples: Any = None  # the per-replica example counter
        self._train_step: Callable[[Any], Any] = lambda batch: None  # the custom loops' step

    def learning_rate(self) -> float:
        """The learning rate the optimizer actually holds."""
        return float(np.asarray(self.model.optimizer.learning_rate))

    def variable_copies(self) -> list[list[np.ndarray]]:
        """Per variable (weights and optimizer slots), the value of each copy that exists."""
        return [_components(v) for v in [*self.model.weights, *self.model.optimizer.variables]]

    def replica_examples(self) -> list[int]:
        """Examples each replica processed in its own step."""
        return [int(v.numpy()) for v in self._examples.values]

    def variable_devices(self) -> list[str]:
        """The devices that hold the model's weights."""
        return sorted({c.device for v in self.model.weights for c in _components(v, numpy=False)})

    def run(
        self,
        dataset: Any,
        epochs: int,
        steps: int | None,
        on_epoch: OnEpoch,
        on_step: OnStep | None = None,
    ) -> None:
        """Train ``epochs`` epochs of ``steps`` steps (``None``: whole passes over ``dataset``)
        with ``self._train_step``, one sync an epoch."""
        self._refuse(dataset)
        steps = steps or int(dataset.cardinality())
        with self._place():
            _build_compiled(self.model, dataset.element_spec)
        batches = iter(self._stream(dataset))
        for epoch in range(epochs):
            started = time.perf_counter()
            losses = []
            for i in range(steps):
                losses.append(self._train_step(next(batches)))
                if on_step is not None:  # steps dispatched: reads no tensor, so no sync
                    on_step(epoch * steps + i + 1)
            values = [float(v) for v in tf.stack(losses).numpy()]  # one sync per epoch
            self.step_losses.extend(values)
            if not on_epoch(epoch, float(np.mean(values)), time.perf_counter() - started):
                return

    def _refuse(self, dataset: Any) -> None:
        """Raise :class:`WorkloadError` for a stream this loop cannot train on."""

    def _stream(self, dataset: Any) -> Any:
        return dataset.repeat()


class FitLoop(_Base):
    """Keras ``fit`` under a ``MirroredStrategy``."""

    def __init__(
        self,
        strategy: Any,
        build: Callable[[], Any],
        compile_args: Callable[[], dict[str, Any]],
        record_steps: bool,
    ) -> None:
        devices = list(strategy.extended.worker_devices)
        super().__init__(devices, strategy.scope, build, compile_args, build_optimizer=False)
        self._strategy = strategy
        self._record_steps = record_steps
        with strategy.scope():
            self._examples = counter = _replica_counter()
        original = self.model.train_step

        def counted_train_step(data: Any) -> Any:
            counter.assign_add(tf.cast(tf.shape(tf.nest.flatten(data)[0])[0], tf.int64))
            return original(data)

        self.model.train_step = counted_train_step

    def run(
        self,
        dataset: Any,
        epochs: int,
        steps: int | None,
        on_epoch: OnEpoch,
        on_step: OnStep | None = None,
    ) -> None:
        """Train ``epochs`` epochs of ``steps`` steps (``None``: whole passes over ``dataset``)."""
        recorded = self.step_losses if self._record_steps else None  # a sync per step
        callbacks = fit_callbacks(on_epoch, on_step, recorded)
        build_from_local_batch(self.model, self._strategy, dataset)  # raw text: see _symbolic
        if steps is None:  # whole epochs, exactly as a user's `fit(dataset, epochs=...)` runs
            self.model.fit(dataset, epochs=epochs, verbose=0, callbacks=callbacks)
        else:
            # A dataset function's stream comes distributed and already repeated.
            repeated = dataset.repeat() if isinstance(dataset, tf.data.Dataset) else dataset
            self.model.fit(
                repeated, epochs=epochs, steps_per_epoch=steps, verbose=0, callbacks=callbacks
            )


class CustomLoop(_Base):
    """``strategy.run`` per-replica steps with the loss averaged over the global batch."""

    def __init__(
        self,
        strategy: Any,
        build: Callable[[], Any],
        compile_args: Callable[[], dict[str, Any]],
        reduction: str,
    ) -> None:
        super().__init__(
            list(strategy.extended.worker_devices), strategy.scope, build, compile_args
        )
        self._strategy = strategy
        with strategy.scope():
            self._examples = counter = _replica_counter()
        model, optimizer = self.model, self.model.optimizer
        replicas = float(strategy.num_replicas_in_sync)

        def replica_step(data: Any) -> Any:
            x, y, sample_weight = unpack(data)
            counter.assign_add(_examples(x))
            with tf.GradientTape() as tape:
                # Keras scales this replica's mean by 1/replicas here: the SUM is the global mean.
                loss = model_loss(model, x, y, call_model(model, x), sample_weight)
                if reduction == "replica-mean":
                    loss = loss * replicas  # the bug: each replica's own mean, not scaled
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
            return loss

        @tf.function
        def train_step(batch: Any) -> Any:
            per_replica = strategy.run(replica_step, args=(batch,))
            return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

        self._train_step = train_step

    def _stream(self, dataset: Any) -> Any:
        if not isinstance(dataset, tf.data.Dataset):  # already distributed: a dataset function's
            return dataset
        return self._strategy.experimental_distribute_dataset(dataset.repeat())


class CpuUpdateLoop(_Base):
    """Variables on the CPU; forward and backward on each replica device; update on the CPU."""

    def __init__(
        self,
        compute_devices: list[str],
        build: Callable[[], Any],
        compile_args: Callable[[], dict[str, Any]],
        reduction: str,
    ) -> None:
        super().__init__(compute_devices, lambda: tf.device("/cpu:0"), build, compile_args)
        n = len(compute_devices)
        self._counters = []
        for device in compute_devices:
            with tf.device(device):
                self._counters.append(tf.Variable(0, dtype=tf.int64, trainable=False))
        model, optimizer, counters = self.model, self.model.optimizer, self._counters

        @tf.function
        def train_step(batch: Any) -> Any:
            losses, grads = [], []
            for i, (device, shard) in enumerate(
                zip(compute_devices, _shards(batch, n), strict=True)
            ):
                with tf.device(device):
                    x, y, sample_weight = unpack(shard)
                    counters[i].assign_add(_examples(x))
                    with tf.GradientTape() as tape:
                        # No strategy here: Keras's loss is this shard's own mean.
                        loss = model_loss(model, x, y, call_model(model, x), sample_weight)
                        if reduction != "replica-mean":  # the bug keeps each shard's own mean
                            loss = loss / n
                    losses.append(loss)
                    grads.append(tape.gradient(loss, model.trainable_variables))
            with tf.device("/cpu:0"):
                summed = [tf.add_n(list(g)) for g in zip(*grads, strict=True)]
                optimizer.apply_gradients(zip(summed, model.trainable_variables, strict=True))
                return tf.add_n(losses)

        self._train_step = train_step

    def _refuse(self, dataset: Any) -> None:
        if not isinstance(dataset, tf.data.Dataset):
            raise WorkloadError(
                "update_on = cpu splits global batches itself; it takes data, not a dataset "
                "function (which the strategy shards)"
            )

    def replica_examples(self) -> list[int]:
        """Examples each compute device processed."""
        return [int(c.numpy()) for c in self._counters]


Loop = FitLoop | CustomLoop | CpuUpdateLoop


def make_loop(
    kind: str,
    strategy: Any,
    build: Callable[[], Any],
    compile_args: Callable[[], dict[str, Any]],
    reduction: str = "global",
    record_steps: bool = False,
) -> Loop:
    """Build the loop ``kind`` around a freshly built model."""
    if kind == "fit":
        return FitLoop(strategy, build, compile_args, record_steps)
    if kind == "custom":
        return CustomLoop(strategy, build, compile_args, reduction)
    if kind == "cpu-update":
        devices = list(strategy.extended.worker_devices)
        return CpuUpdateLoop(devices, build, compile_args, reduction)
    raise ValueError(f"unknown loop {kind!r}; known: {', '.join(LOOP_KINDS)}")


def _replica_counter() -> Any:
    return tf.Variable(
        0,
        dtype=tf.int64,
        trainable=False,
        synchronization=tf.VariableSynchronization.ON_READ,
        aggregation=tf.VariableAggregation.SUM,
    )


def _components(variable: Any, numpy: bool = True) -> list[Any]:
    """Each copy of a (mirrored) variable: as NumPy, or the copies themselves."""
    value = getattr(variable, "value", variable)
    components = getattr(value, "values", None) or (value,)
    return [np.asarray(c.numpy()) for c in components] if numpy else list(components)


def _examples(x: Any) -> Any:
    """The examples in a batch of inputs ``x`` (any structure): its first tensor's length."""
    first = next(t for t in tf.nest.flatten(x) if t is not None)
    return tf.cast(tf.shape(first)[0], tf.int64)


def _shards(batch: Any, n: int) -> list[Any]:
    """``batch`` (any structure) cut into ``n`` equal shards along the first axis."""
    leaves = [tf.split(t, n) for t in tf.nest.flatten(batch)]
    return [tf.nest.pack_sequence_as(batch, [parts[i] for parts in leaves]) for i in range(n)]


def _build_compiled(model: Any, spec: Any) -> None:
    """Build the compiled loss and metrics first: no variable may be made in a replica step."""
    replica = tf.nest.map_structure(lambda s: getattr(s, "_value_specs", (s,))[0], spec)
    model._symbolic_build(data_batch=replica)  # Keras's own, as fit calls it
