"""Inside the child: the gradient noise scale as a side measurement that never fails a trial.

Each backend's meter re-implements the training step for the structures it supports: ``(x, y)``
batches of one input and one output. Where it cannot measure — a setup it recognises up front
(:func:`unsupported_reason`, raised as :class:`NoiseUnsupported`), an error of its set-up or of a
measurement, an out-of-memory — :class:`GuardedNoise` stops it, the trial trains on, and the
result says why (``noise_scale_skipped``). It does not try to be Keras for what it cannot measure.

Backend-neutral: no framework import.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from tuner.core.efficiency import NoiseScale
from tuner.core.oom import is_oom_error

__all__ = ["GuardedNoise", "NoiseUnsupported", "failure_reason", "guarded", "unsupported_reason"]

SUPPORTED = "the noise meter supports (x, y) batches of one input and one output"


class NoiseUnsupported(ValueError):
    """A meter cannot measure this workload; the message is the reason stored for it."""


def unsupported_reason(model: Any, element: Any) -> str | None:
    """Why the meter cannot measure ``model`` on batches shaped as ``element`` (one batch, or a
    dataset's element spec: a tuple ``(x, y)`` or ``(x, y, sample_weight)``), or ``None``.

    Cheap: the model's outputs (where it knows them), sample weights and structured targets;
    inputs of any structure go to the model's own call.
    A model not yet built is fine (the meter reads its variables once training has built it)."""
    outputs = _outputs(model)
    if outputs is not None and len(outputs) > 1:
        return f"{SUPPORTED}: this model has {len(outputs)} outputs"
    if not isinstance(element, tuple) or len(element) not in (2, 3):
        return f"{SUPPORTED}: the batches are {_shape_of(element)}"
    if len(element) == 3 and element[2] is not None:
        return f"{SUPPORTED}: the batches carry sample weights"
    if isinstance(element[1], (Mapping, list, tuple)):
        return f"{SUPPORTED}: the targets are {_shape_of(element[1])}"
    # Structured inputs to one output are left to the meter: the model's own call takes them.
    return None


def failure_reason(exc: BaseException) -> str:
    """The one line stored for a meter that raised ``exc``."""
    if isinstance(exc, NoiseUnsupported):
        return str(exc)
    if is_oom_error(exc):
        return f"the measurement ran out of memory ({type(exc).__name__})"
    message = " ".join(str(exc).split())  # one line
    if len(message) > 300:
        message = message[:297] + "..."
    return f"the noise meter failed: {type(exc).__name__}: {message}"


class GuardedNoise:
    """A noise meter whose failure never fails the trial: what it raises stops it, and
    :attr:`skipped` says why. Its values are the meter's own while it works."""

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
    """The meter ``build()`` makes, guarded; ``None`` where it makes none; a stopped meter
    (with the reason) where building it raises."""
    try:
        meter = build()
    except Exception as exc:  # a side measurement: the trial goes on without it
        return GuardedNoise(None, skipped=failure_reason(exc))
    return None if meter is None else GuardedNoise(meter)


def _outputs(model: Any) -> list[Any] | None:
    try:
        outputs = model.outputs
    except (AttributeError, ValueError):  # a model not built, or without a graph of layers
        return None
    return list(outputs) if outputs is not None else None


def _shape_of(part: Any) -> str:
    if isinstance(part, Mapping):
        return f"a dict of {len(part)} ({', '.join(map(str, part))})"
    if isinstance(part, (list, tuple)):
        return f"a {type(part).__name__} of {len(part)}"
    return f"a {type(part).__name__}"
