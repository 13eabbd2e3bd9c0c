"""Inside the child: the Keras callbacks every ``fit`` loop times and reports through."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import keras

OnEpoch = Callable[[int, float, float], bool]
"""Called after each epoch with (epoch index, mean loss, seconds); returns False to stop."""
OnStep = Callable[[int], None]
"""Called after each step with the steps run so far (all epochs); must be cheap and must not read
a device value (:class:`tuner.core.progress.StepReporter`)."""


class EpochHooks(keras.callbacks.Callback):
    """Times each epoch and hands (epoch, loss, seconds) to ``on_epoch``; stops when it says so."""

    def __init__(self, on_epoch: OnEpoch) -> None:
        super().__init__()
        self._on_epoch = on_epoch
        self._started = 0.0

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self._started = time.perf_counter()

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        loss = float((logs or {}).get("loss", math.nan))  # reading it syncs the devices
        if not self._on_epoch(epoch, loss, time.perf_counter() - self._started):
            self.model.stop_training = True


class StepCallback(keras.callbacks.Callback):
    """Tells ``on_step`` the run's step count after each batch. Costs no extra sync: Keras 3 on
    TensorFlow already turns the batch's logs into Python numbers at every batch end, and this
    reads none of them; ``async_safe`` keeps Keras's asynchronous dispatch where it exists."""

    async_safe = True

    def __init__(self, on_step: OnStep) -> None:
        super().__init__()
        self._on_step = on_step
        self._done = 0

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        # A running count: an epoch's step count may be unknown (a dataset of unknown
        # cardinality), and the count must never go back at an epoch's start.
        self._done += 1
        self._on_step(self._done)


def fit_callbacks(
    on_epoch: OnEpoch, on_step: OnStep | None, step_losses: list[float] | None
) -> list[Any]:
    """The callbacks of one ``fit``: epoch timing, per-step progress, per-step losses if asked."""
    callbacks: list[Any] = [EpochHooks(on_epoch)]
    if on_step is not None:
        callbacks.append(StepCallback(on_step))
    if step_losses is not None:  # a sync per step: for validation only
        append = step_losses.append
        callbacks.append(
            keras.callbacks.LambdaCallback(
                on_train_batch_end=lambda _, logs: append(float((logs or {}).get("loss", math.nan)))
            )
        )
    return callbacks
