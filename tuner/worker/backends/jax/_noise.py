"""Inside the child, under Keras on JAX: the gradient noise scale from per-shard gradients.

One global batch (outside the timed epochs) is split into ``replicas`` shards; each shard's
gradient comes from ``jax.vmap`` of ``jax.grad`` of Keras's stateless ``compute_loss_and_updates``
(on JAX the shard's own mean), the shard axis laid out over the mesh as in training. The state
it returns is dropped. Under ``vmap`` the shards would share the model's seed states, so each
shard gets its own copy advanced far apart: dropout draws its own masks per shard, noise the
estimate must see. Norms are taken in float32.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp
import keras
import numpy as np

from tuner.worker.losses import unpack
from tuner.worker.noise import Meter


class JaxNoiseMeter(Meter):
    """Measures ``steps`` extra steps per :meth:`measure` on ``batches`` and keeps ``B_simple``."""

    def __init__(
        self, model: Any, batches: Iterator[Any], global_batch: int, replicas: int, steps: int
    ) -> None:
        if replicas < 2:
            raise ValueError("the gradient noise scale needs at least 2 replicas")
        if global_batch % replicas:
            raise ValueError(f"a global batch of {global_batch} does not split into {replicas}")
        super().__init__(model, global_batch, replicas, steps)
        self._batches = batches
        self._sharding = _shard_axis_sharding(self.replicas)
        self._draws = 0  # shard gradients drawn so far: each gets its own random seeds
        self._step: Any = None  # made at the first measurement, once the model is built

    def _dispatch(self) -> list[Any]:
        if self._step is None:
            self._step = jax.jit(_make_step(self._model, self.replicas))
        state = _state(self._model)  # read once: the step takes it as arguments (traced once)
        pending = []
        for _ in range(self.steps):
            draw = np.uint32(self._draws % 2**16)
            pending.append(self._step(*state, draw, *self._next_shards()))
            self._draws += self.replicas
        return pending

    def _next_shards(self) -> tuple[Any, Any, Any]:
        """The next ``(x, y, sample_weight)``, shard axis ``(replicas, b, ...)`` on the mesh."""
        n, b = self.replicas, self.per_replica_batch

        def split(array: Any) -> Any:
            shards = np.asarray(array).reshape((n, b, *np.shape(array)[1:]))
            return shards if self._sharding is None else jax.device_put(shards, self._sharding)

        x, y, sample_weight = unpack(next(self._batches))
        return jax.tree.map(split, x), jax.tree.map(split, y), jax.tree.map(split, sample_weight)


CHECK_SHARDS = 2
"""The shards of :func:`measure_noise_once`: the fewest a meter measures with."""


def measure_noise_once(model: Any, batch: tuple[Any, ...], samples: int) -> None:
    """One measurement step of :class:`JaxNoiseMeter` in two shards (fewer than two examples are
    not measured): raises what a trial's meter would."""
    usable = samples - samples % CHECK_SHARDS
    if usable < CHECK_SHARDS:
        return
    head = jax.tree.map(lambda array: np.asarray(array)[:usable], batch)
    meter = JaxNoiseMeter(model, itertools.repeat(head), usable, CHECK_SHARDS, steps=1)
    meter.measure()


def _state(model: Any) -> tuple[list[Any], list[Any], list[Any], list[Any] | None]:
    """The model's trainable, non-trainable and metric values and its optimizer's (what
    ``compute_loss_and_updates`` maps: the loss scale of a mixed-precision optimizer)."""
    optimizer = getattr(model, "optimizer", None)
    return (
        [v.value for v in model.trainable_variables],
        [v.value for v in model.non_trainable_variables],
        [v.value for v in getattr(model, "metrics_variables", [])],
        [v.value for v in optimizer.variables] if optimizer is not None else None,
    )


SEED_SPACING = 2**16
"""How far apart (in the counter word of a Keras seed state) two shard gradients' random seeds
start: training advances a seed generator by one per call."""


def _make_step(model: Any, replicas: int) -> Any:
    """The (un-jitted) measurement step; shard ``i`` draws from the seed states advanced to
    ``(draw + i + 1) · SEED_SPACING`` (the next training step keeps its own)."""
    seeds = [i for i, v in enumerate(model.non_trainable_variables) if _is_seed_state(v)]
    state_axes = [0 if i in seeds else None for i in range(len(model.non_trainable_variables))]

    def shard_loss(
        trainable: Any, non_trainable: Any, metrics: Any, optimizer: Any, x: Any, y: Any, w: Any
    ) -> Any:
        # Keras's own stateless loss (what its JAX train_step differentiates), unscaled by a
        # mixed-precision optimizer; the updated state it returns is dropped.
        _, (loss, *_) = model.compute_loss_and_updates(
            trainable, non_trainable, metrics, x, y, w, training=True, optimizer_variables=optimizer
        )
        return jnp.asarray(loss, jnp.float32)

    in_axes = (None, state_axes, None, None, 0, 0, 0)
    shard_grads = jax.vmap(jax.grad(shard_loss), in_axes=in_axes)

    def step(
        trainable: Any,
        non_trainable: Any,
        metrics: Any,
        optimizer: Any,
        draw: Any,
        xs: Any,
        ys: Any,
        ws: Any,
    ) -> tuple[Any, Any]:
        # Every shard its own seeds: vmap would otherwise give all shards the same dropout masks,
        # noise they share, which the estimate would count as signal.
        non_trainable = list(non_trainable)
        for i in seeds:
            state = non_trainable[i]
            counters = (draw + 1 + jnp.arange(replicas, dtype=state.dtype)) * SEED_SPACING
            advance = jnp.stack([jnp.zeros_like(counters), counters], axis=1)
            non_trainable[i] = state[None, :] + advance.astype(state.dtype)
        grads = shard_grads(trainable, non_trainable, metrics, optimizer, xs, ys, ws)
        grads = [g.astype(jnp.float32) for g in grads]
        per_shard = sum(jnp.sum(jnp.square(g), axis=tuple(range(1, g.ndim))) for g in grads)
        mean_sq = jnp.mean(per_shard)
        mean_grad_sq = sum(jnp.sum(jnp.square(jnp.mean(g, axis=0))) for g in grads)
        return mean_sq, mean_grad_sq

    return step


def _is_seed_state(variable: Any) -> bool:
    """Whether a non-trainable variable is a Keras ``SeedGenerator``'s state."""
    return str(getattr(variable, "path", variable.name)).endswith("seed_generator_state")


def _shard_axis_sharding(replicas: int) -> Any:
    """The shard axis laid over the mesh's batch axis, or ``None`` without a distribution or
    when ``replicas`` does not split over its devices."""
    distribution = keras.distribution.distribution()
    if distribution is None:
        return None
    mesh = distribution.device_mesh
    if replicas % int(np.prod(mesh.shape)):
        return None
    return distribution.get_data_layout((replicas, 1)).backend_layout
