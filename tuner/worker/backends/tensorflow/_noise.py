"""Inside the child: measure the gradient noise scale from the replicas' own gradients, on a few
steps outside the timed epochs (the estimator, and why ``compute_loss`` is multiplied back by
the replicas: ``docs/design/measurement.md``). The variables are read when the step is traced,
after training has built the model.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from tuner.worker.losses import call_model, model_loss, unpack
from tuner.worker.noise import Meter, overrides, state_kept


class NoiseMeter(Meter):
    """Measures ``steps`` extra steps per call of :meth:`measure` and keeps ``B_simple``."""

    def __init__(
        self, strategy: Any, model: Any, dataset: Any, global_batch: int, steps: int
    ) -> None:
        super().__init__(model, global_batch, strategy.num_replicas_in_sync, steps)
        self._iterator = iter(strategy.experimental_distribute_dataset(dataset.repeat()))
        # Keras's own compute_loss is scaled by 1/replicas in a replica context; a user's own
        # is whatever it returns (a uniform scale, which B_simple does not see).
        unscale = 1 if overrides(model, "compute_loss") else self.replicas
        self._step = _make_step(strategy, model, unscale)

    def sample(self) -> tuple[float, float]:
        """One measurement step's ``(mean‖g_i‖², ‖ḡ‖²)``, not counted in the estimate (the
        model's state is put back): what the estimate is made of, for checking its scale."""
        with state_kept(self._model):
            mean_sq, mean_grad_sq = self._step(self._iterator)
        return float(mean_sq), float(mean_grad_sq)

    def _dispatch(self) -> list[Any]:
        with state_kept(self._model):
            return [self._step(self._iterator) for _ in range(self.steps)]


def measure_noise_once(model: Any, batch: tuple[Any, ...], samples: int) -> None:
    """One measurement step of :class:`NoiseMeter` under the default strategy, the model left as
    it was: raises what a trial's meter would raise."""
    parts = list(batch)
    while parts and parts[-1] is None:  # from_tensors takes no None: an absent part is left out
        parts.pop()
    dataset = tf.data.Dataset.from_tensors(tuple(parts))
    meter = NoiseMeter(tf.distribute.get_strategy(), model, dataset, samples, steps=1)
    meter.sample()


def _make_step(strategy: Any, model: Any, unscale: int) -> Any:
    """The measurement step: ``iterator -> (mean‖g_i‖², ‖ḡ‖²)``, each loss times ``unscale``."""

    def replica_step(data: Any) -> Any:
        x, y, sample_weight = unpack(data)
        with tf.GradientTape() as tape:
            prediction = call_model(model, x)
            loss = model_loss(model, x, y, prediction, sample_weight)
            # Keras's 1/replicas undone: the gradient of this replica's own mean loss.
            value = tf.cast(loss, tf.float32) * float(unscale)
        variables = model.trainable_variables  # built by now (at trace time)
        # A variable the loss does not reach (an output without a loss) has no gradient.
        grads = [tf.convert_to_tensor(g) for g in tape.gradient(value, variables) if g is not None]
        squared = tf.add_n([tf.reduce_sum(tf.square(tf.cast(g, tf.float32))) for g in grads])
        return squared, grads

    @tf.function
    def step(iterator: Any) -> tuple[Any, Any]:
        # The element is one argument, whatever its structure (x alone, (x, y), (x, y, w)).
        squared, grads = strategy.run(replica_step, args=(next(iterator),))
        mean_sq = strategy.reduce("MEAN", squared, axis=None)
        mean_grad_sq = tf.add_n(
            [
                tf.reduce_sum(tf.square(tf.cast(strategy.reduce("MEAN", g, axis=None), tf.float32)))
                for g in grads
            ]
        )
        return mean_sq, mean_grad_sq

    return step
