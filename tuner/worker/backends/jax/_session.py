"""Inside the child: a training run on Keras 3's JAX backend, under ``DataParallel``."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import jax
import jaxlib
import keras

from tuner.core.objective import logged_name
from tuner.core.protocol import RunRequest
from tuner.worker import meters, precision
from tuner.worker.backends.jax import _devices
from tuner.worker.backends.jax import _evidence as evidence
from tuner.worker.backends.jax import _gang as gang
from tuner.worker.backends.jax import _inputs as inputs
from tuner.worker.backends.jax._loop import JaxFitLoop
from tuner.worker.backends.jax._noise import JaxNoiseMeter
from tuner.worker.building import FirstInputs
from tuner.worker.determinism import seed_everything
from tuner.worker.losses import unpack
from tuner.worker.meters import Emit, Meter
from tuner.worker.noise import NoiseUnsupported
from tuner.worker.session import ModelRecipe, Session, initial_weights, plan_run, scalar_logs
from tuner.worker.sources import map_leaves


def versions() -> dict[str, str]:
    """Keras, jax and jaxlib versions."""
    return {"keras": keras.__version__, "jax": jax.__version__, "jaxlib": jaxlib.__version__}


class JaxBackend:
    """The JAX side of a session: its devices (across hosts, every host's), and this process's
    share of each global batch."""

    name = "jax"

    def __init__(self, devices: list[Any], share: gang.Share | None = None) -> None:
        self.devices = devices
        self.share = share or gang.Share()

    def evaluator(self, session: Session) -> Callable[[], float]:
        """What evaluates the model now over the first ``val_samples`` samples, none dropped."""
        val = inputs.val_arrays(session.source, session.request.budget.val_samples)
        model, batch, replicas = session.loop.model, session.batch, len(self.devices)
        key, logs, share = (
            logged_name(session.request.workload.objective),
            session.val_logs,
            self.share,
        )
        return lambda: evaluate_exactly(model, val, batch, replicas, key, logs, share)

    def input_throughput(self, session: Session) -> float:
        """The input stream alone, each batch placed on the devices as training places it (across
        hosts: this rank's share of each, which it alone reads, placed on its devices as part of
        the global array; global samples/s, every host reading its share as fast)."""
        sharding = _devices.batch_sharding(self.devices)
        batches = inputs.train_batches(session.source, session.batch, session.request.seed)
        place = _place if self.share.hosts > 1 else jax.device_put
        stream = (place(batch, sharding) for batch in self.share.batches(batches))
        return meters.input_throughput(stream, session.steps, session.batch, jax.block_until_ready)

    def noise_meter(self, session: Session, steps: int) -> JaxNoiseMeter:
        """The noise meter on batches drawn apart from training (another seed's order)."""
        if self.share.hosts > 1:
            raise NoiseUnsupported(
                "the gradient noise scale is not measured across hosts: its shard gradients are "
                "laid out by one process"
            )
        batch = session.batch
        batches = inputs.train_batches(session.source, batch, session.request.seed + 1)
        return JaxNoiseMeter(session.loop.model, batches, batch, len(self.devices), steps)

    def peak_memory_per_device(self) -> list[int | None]:
        """``peak_bytes_in_use`` per device of this host (``None`` on the CPU, which keeps no
        statistics); across hosts another's devices cannot be asked."""
        return evidence.peak_memory_per_device(d for d in self.devices if _is_local(d))

    def device_kind(self) -> str:
        """``cpu``, or the GPU's name."""
        return _devices.device_kind(self.devices)

    versions = staticmethod(versions)


def _place(batch: tuple[Any, ...], sharding: Any) -> Any:
    """One process's part of a global batch made a global array, as Keras's trainer makes it."""
    return jax.tree.map(lambda a: jax.make_array_from_process_local_data(sharding, a), batch)


def _is_local(device: Any) -> bool:
    return bool(device.process_index == jax.process_index())


def evaluate_exactly(
    model: Any,
    val: tuple[Any, ...],
    batch: int,
    replicas: int,
    key: str = "loss",
    logs: dict[str, float] | None = None,
    share: gang.Share | None = None,
) -> float:
    """The loss (or ``key`` of the logs: the objective's) over every sample of ``val`` at ``batch``.
    ``DataParallel`` needs batches that divide by ``replicas``: the few samples left over are each
    repeated ``replicas`` times (the same mean) and weighed by their count. ``logs``: filled with
    every logged figure (the compiled metrics), weighed alike. ``share``: across hosts, this
    rank's rows of each global batch (every rank's together make one host's batches)."""
    total = inputs.length(val)
    head = total - total % replicas
    parts = []
    share = share or gang.Share()
    hooks = gang.in_lockstep(jax.devices(), share.hosts)
    if head:
        part = share.rows(inputs.slice_batch(val, 0, head), batch)
        parts.append((head, _evaluate(model, part, share.local_batch(batch), hooks)))
    if total > head:
        tail = inputs.slice_batch(val, head, total)
        repeated = tuple(map_leaves(lambda a: a.repeat(replicas, axis=0), part) for part in tail)
        part = share.rows(repeated, batch)
        parts.append((total - head, _evaluate(model, part, share.local_batch(batch), hooks)))
    names = set.intersection(*(set(found) for _, found in parts))
    weighed = {name: sum(count * found[name] for count, found in parts) / total for name in names}
    if logs is not None:
        logs.clear()
        logs.update(weighed)
    return weighed[key]


def _evaluate(
    model: Any, val: tuple[Any, ...], batch: int, callbacks: list[Any]
) -> dict[str, float]:
    # Keras's own evaluate: losses per output, loss weights and sample weights are the model's,
    # and "loss" is its total, what fit reports as the loss.
    x, y, weights = unpack(val)
    logs = model.evaluate(
        x,
        y,
        sample_weight=weights,
        batch_size=batch,
        verbose=0,
        return_dict=True,
        callbacks=callbacks,
    )
    return scalar_logs(logs)


def open_session(request: RunRequest, emit: Emit, record_steps: bool = False) -> Session:
    """Open a run under ``DataParallel``; ``record_steps``: for validation only."""
    timings: dict[str, float] = {}
    plan = request.plan
    if request.gang is not None:
        mark = time.perf_counter()
        gang.join(request)  # before anything starts JAX's devices (the workload's data may)
        timings["gang_join_s"] = time.perf_counter() - mark
    share = gang.share(request)
    precision_name = precision.apply(request)  # before any model is built
    mark = time.perf_counter()
    devices = _devices.init_devices(plan)
    timings["device_init_s"] = time.perf_counter() - mark

    mark = time.perf_counter()
    batch = request.global_batch_size
    seed_everything(request.seed)  # an unseeded shuffle in the data: the same order per seed
    source = inputs.load_source(request.workload)
    steps, windows, checks, rule = plan_run(request, batch, source)
    first = FirstInputs(lambda size: inputs.first_batch(source, "train", size))
    # No distribution set yet: the same numbers on any devices.
    initial = initial_weights(request, inputs=first)
    recipe = ModelRecipe(request, rule, initial, precision_name, inputs=first)
    # Across hosts each rank feeds its own share (``share``): Keras must not shard it again.
    distribution = keras.distribution.DataParallel(devices=devices, auto_shard_dataset=False)
    keras.distribution.set_distribution(distribution)
    loop = JaxFitLoop(
        devices,
        recipe.build,
        recipe.compile_args,
        reduction=request.loss_reduction,
        record_steps=record_steps,
        share=share,
    )
    share.local_batch(batch)  # a batch that does not split over the hosts is refused up front
    train_data = inputs.train_batches(source, batch, request.seed)  # global: the loop shares
    timings["build_s"] = time.perf_counter() - mark
    _devices.apply_memory_cap()  # after the imports, before anything trains
    return Session(
        request=request,
        plan=plan,
        backend=JaxBackend(devices, share),
        source=source,
        batch=batch,
        steps=steps,
        windows=windows,
        recipe=recipe,
        loop=loop,
        train_data=train_data,
        meter=Meter(emit, samples_per_epoch=steps * batch, epochs=windows),
        timings=timings,
        checks=checks,
    )
