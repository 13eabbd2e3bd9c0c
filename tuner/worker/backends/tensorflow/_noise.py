"""Inside the child: measure the gradient noise scale from the replicas' own gradients.

At the end of each epoch, on a few separate steps (outside the timed epochs, so throughput is not
affected), every replica computes the gradient of the *mean* loss over its own ``b`` examples —
our own per-example loss and mean, so none of the 1/replicas scaling Keras applies to losses under
``tf.distribute`` is involved — and reports ``‖g_i‖²``; the replicas' mean gradient ``ḡ`` is
all-reduced and its ``‖ḡ‖²`` taken. :mod:`tuner.core.efficiency` turns those into ``B_simple``. The
weights are not updated by these steps, and non-trainable state (batch-norm statistics) is put
back afterwards. Regularization losses are included: the same on every replica, they add to
``G`` and cancel in ``S``. An out-of-memory in a measurement step stops the measurement (the
trial goes on) rather than count against the batch size. It measures ``(x, y)`` batches of one
input and one output; for others it raises :class:`~tuner.worker.noise.NoiseUnsupported` up front,
and the trial skips the measurement (:class:`~tuner.worker.noise.GuardedNoise`). The variables are
read when the step is traced, after training has built the model (a ``Sequential`` without
``keras.Input`` has none before).
"""

from __future__ import annotations

import time
from typing import Any

import tensorflow as tf

from tuner.core.efficiency import NoiseScale
from tuner.core.oom import is_oom_error
from tuner.worker.losses import per_example_loss
from tuner.worker.meters import auto_noise_steps
from tuner.worker.noise import NoiseUnsupported, unsupported_reason

__all__ = ["NoiseMeter", "auto_noise_steps"]


class NoiseMeter:
    """Measures ``steps`` extra steps per call of :meth:`measure` and keeps ``B_simple``."""

    def __init__(
        self, strategy: Any, model: Any, dataset: Any, loss: Any, global_batch: int, steps: int
    ) -> None:
        reason = unsupported_reason(model, dataset.element_spec)
        if reason is not None:
            raise NoiseUnsupported(reason)
        self.replicas = int(strategy.num_replicas_in_sync)
        self.per_replica_batch = global_batch // self.replicas
        self.steps = steps
        self.scale = NoiseScale()
        self.seconds = 0.0
        self.stopped: str | None = None
        self._model = model
        self._iterator = iter(strategy.experimental_distribute_dataset(dataset.repeat()))
        loss_fn = per_example_loss(loss)

        def replica_step(x: Any, y: Any) -> Any:
            with tf.GradientTape() as tape:
                prediction = model(x, training=True)
                value = tf.reduce_mean(tf.cast(loss_fn(y, prediction), tf.float32))
                if model.losses:
                    value += tf.add_n([tf.cast(r, tf.float32) for r in model.losses])
            variables = model.trainable_variables  # built by now (at trace time)
            grads = [tf.convert_to_tensor(g) for g in tape.gradient(value, variables)]
            squared = tf.add_n([tf.reduce_sum(tf.square(tf.cast(g, tf.float32))) for g in grads])
            return squared, grads

        @tf.function
        def step(iterator: Any) -> tuple[Any, Any]:
            squared, grads = strategy.run(replica_step, args=next(iterator))
            mean_sq = strategy.reduce("MEAN", squared, axis=None)
            mean_grad_sq = tf.add_n(
                [
                    tf.reduce_sum(
                        tf.square(tf.cast(strategy.reduce("MEAN", g, axis=None), tf.float32))
                    )
                    for g in grads
                ]
            )
            return mean_sq, mean_grad_sq

        self._step = step

    @property
    def measured_steps(self) -> int:
        """The measurement steps whose estimates counted."""
        return self.scale.steps

    def measure(self) -> float | None:
        """Run the extra steps, update the estimate, record it for the epoch; return it."""
        if self.stopped:
            return self.scale.value
        started = time.perf_counter()
        saved = [v.numpy() for v in self._model.non_trainable_variables]
        try:
            # Dispatch every step first and read the values after: no device sync between steps.
            pending = [self._step(self._iterator) for _ in range(self.steps)]
            self.scale.add_steps(self.replicas, self.per_replica_batch, pending)
        except Exception as exc:
            if not is_oom_error(exc):
                raise
            self.stopped = f"the measurement ran out of memory ({type(exc).__name__})"
        finally:
            for variable, value in zip(self._model.non_trainable_variables, saved, strict=True):
                variable.assign(value)
        self.scale.mark_epoch()
        self.seconds += time.perf_counter() - started
        return self.scale.value
