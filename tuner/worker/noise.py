"""Inside the child: the gradient noise scale as a side measurement that never fails a trial.

What a meter cannot measure (:class:`NoiseUnsupported`), and any error or out-of-memory, stop it
(:class:`GuardedNoise`): the trial trains on and the result says why. Backend-neutral.
"""

from __future__ import annotations

import contextlib
import inspect
import time
from collections.abc import Callable, Iterator
from typing import Any

from tuner.core.efficiency import NoiseScale
from tuner.core.errors import error_line
from tuner.core.oom import is_oom_error

HIDDEN_LOSS = (
    "the model's own train_step computes its loss without compute_loss (and the model does not "
    "override compute_loss): the noise meter cannot see the loss it trains on"
)


class NoiseUnsupported(ValueError):
    """A meter cannot measure this workload; the message is the reason stored for it."""


def unsupported_reason(model: Any) -> str | None:
    """Why ``model.compute_loss`` cannot give the loss ``model`` trains on, or ``None``: a custom
    ``train_step`` that never calls it (read from its source; none to read: a compiled loss is
    taken as the trained one)."""
    if overrides(model, "compute_loss") or not overrides(model, "train_step"):
        return None
    calls = _calls_compute_loss(type(model).train_step)
    if calls is False or (calls is None and getattr(model, "loss", None) is None):
        return HIDDEN_LOSS
    return None


def _calls_compute_loss(train_step: Any) -> bool | None:
    """Whether a ``train_step``'s source calls ``compute_loss`` (``None``: no source to read)."""
    try:
        return "compute_loss" in inspect.getsource(train_step)
    except (OSError, TypeError):
        return None


def overrides(model: Any, name: str) -> bool:
    """Whether ``model``'s class defines ``name`` itself (the class: loops wrap the instance's)."""
    for cls in type(model).__mro__:
        if name in vars(cls):
            return not cls.__module__.startswith("keras")
    return False


@contextlib.contextmanager
def state_kept(model: Any) -> Iterator[None]:
    """Puts ``model``'s non-trainable and metric variables back as they were, whatever happens."""
    variables = [*model.non_trainable_variables, *getattr(model, "metrics_variables", [])]
    saved = [v.numpy() for v in variables]
    try:
        yield
    finally:
        for variable, value in zip(variables, saved, strict=True):
            variable.assign(value)


class Meter:
    """What both backends' meters share: ``steps`` extra steps per :meth:`measure`, ``B_simple``."""

    def __init__(self, model: Any, global_batch: int, replicas: int, steps: int) -> None:
        reason = unsupported_reason(model)
        if reason is not None:
            raise NoiseUnsupported(reason)
        self.replicas = int(replicas)
        self.per_replica_batch = global_batch // self.replicas
        self.steps = steps
        self.scale = NoiseScale()
        self.seconds = 0.0
        self.stopped: str | None = None
        self._model = model

    @property
    def measured_steps(self) -> int:
        """The measurement steps whose estimates counted."""
        return self.scale.steps

    def measure(self) -> float | None:
        """Run the extra steps, update the estimate, record it for the epoch; return it."""
        if self.stopped:
            return self.scale.value
        started = time.perf_counter()
        try:
            self.scale.add_steps(self.replicas, self.per_replica_batch, self._dispatch())
        except Exception as exc:
            if not is_oom_error(exc):
                raise
            self.stopped = f"the measurement ran out of memory ({type(exc).__name__})"
        self.scale.mark_epoch()
        self.seconds += time.perf_counter() - started
        return self.scale.value

    def _dispatch(self) -> list[Any]:
        """Every step of one :meth:`measure` dispatched, read after: no sync between steps."""
        raise NotImplementedError


def failure_reason(exc: BaseException) -> str:
    """The one line stored for a meter that raised ``exc``."""
    if isinstance(exc, NoiseUnsupported):
        return str(exc)
    if is_oom_error(exc):
        return f"the measurement ran out of memory ({type(exc).__name__})"
    return f"the noise meter failed: {error_line(exc)}"


class GuardedNoise:
    """A noise meter whose failure never fails the trial: it stops, and :attr:`skipped` says why."""

    def __init__(self, meter: Any | None, skipped: str | None = None) -> None:
        self._meter = meter
        self._failure = skipped  # why its set-up or a measurement raised
        self.scale = meter.scale if meter is not None else NoiseScale()
        self._failed_s = 0.0  # time spent in measurements that raised

    @property
    def seconds(self) -> float:
        """The meter's time, with that of the measurements that raised."""
        return (self._meter.seconds if self._meter is not None else 0.0) + self._failed_s

    @property
    def stopped(self) -> str | None:
        """Why the meter stopped itself (an out-of-memory it caught), or ``None``."""
        return self._meter.stopped if self._meter is not None else None

    @property
    def skipped(self) -> str | None:
        """Why the measurement was skipped (it raised, or the meter stopped), or ``None``."""
        return self._failure or self.stopped

    @property
    def measured_steps(self) -> int:
        """The measurement steps whose estimates counted."""
        return self.scale.steps  # type: ignore[no-any-return]

    def measure(self) -> float | None:
        """The meter's :meth:`measure`; on any error, stop it and keep the reason."""
        if self._meter is None or self.skipped is not None:
            return self.scale.value  # type: ignore[no-any-return]
        started = time.perf_counter()
        try:
            return self._meter.measure()  # type: ignore[no-any-return]
        except Exception as exc:  # a side measurement: the trial goes on without it
            self._failure = failure_reason(exc)
            self._failed_s += time.perf_counter() - started
            return self.scale.value  # type: ignore[no-any-return]


def guarded(build: Callable[[], Any | None]) -> GuardedNoise | None:
    """The meter ``build()`` makes, guarded (``None``: none; stopped with why, if it raised)."""
    try:
        meter = build()
    except Exception as exc:  # a side measurement: the trial goes on without it
        return GuardedNoise(None, skipped=failure_reason(exc))
    return None if meter is None else GuardedNoise(meter)
