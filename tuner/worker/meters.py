"""Inside the child: what a training run measures besides its loss — epoch times and throughput,
the first epoch's tracing, the input pipeline alone and GPU utilisation. Backend-neutral."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any

from tuner.core.devices import DevicePlan
from tuner.core.progress import StepReporter
from tuner.core.protocol import EpochEvent, Event, WindowsDoneEvent

Emit = Callable[[Event], None]
"""Sends one event to the driver (:func:`tuner.core.protocol.encode_event` on stdout)."""


def auto_noise_steps(epoch_steps: int) -> int:
    """Measurement steps per epoch when not set: 1 % of the epoch's steps, between 2 and 16 (a
    measurement step costs about three training steps: the cost stays near 3 %)."""
    return max(2, min(16, round(0.01 * epoch_steps)))


INPUT_PROBE_S = 0.5
"""How long the input pipeline is timed alone: thousands of samples at the rates it must keep up
with, and a small part of a trial (it once ran two whole windows: ~3 s of a 13 s trial)."""
INPUT_PROBE_MIN_BATCHES = 8
"""Batches timed at the least, however long they take."""


def input_throughput(
    stream: Any,
    steps: int,
    global_batch: int,
    wait: Callable[[Any], Any],
    seconds: float = INPUT_PROBE_S,
) -> float:
    """Samples per second the input pipeline delivers alone, after a warm-up of ``seconds / 2``."""
    iterator = iter(stream)
    _draw(iterator, steps, seconds / 2, wait)
    mark = time.perf_counter()
    drawn = _draw(iterator, steps, seconds, wait)
    elapsed = time.perf_counter() - mark
    return drawn * global_batch / elapsed if elapsed > 0 else 0.0


def _draw(iterator: Any, most: int, seconds: float, wait: Callable[[Any], Any]) -> int:
    """Draw batches until ``most`` or, past :data:`INPUT_PROBE_MIN_BATCHES`, ``seconds``; how many.
    The last one is waited for, so the time covers every batch drawn."""
    started = time.perf_counter()
    drawn = 0
    last = None
    while drawn < most:
        last = next(iterator)
        drawn += 1
        if drawn >= INPUT_PROBE_MIN_BATCHES and time.perf_counter() - started >= seconds:
            break
    if last is not None:
        wait(last)
    return drawn


class Meter:
    """Times epochs, records their losses and throughput, reports progress, stops on NaN."""

    def __init__(self, emit: Emit, samples_per_epoch: int, epochs: int) -> None:
        self._emit = emit
        self._samples = samples_per_epoch
        self._epochs = epochs
        self.epoch_seconds: list[float] = []
        self.throughputs: list[float] = []
        self.losses: list[float] = []
        self.diverged_at: int | None = None

    def __call__(self, epoch: int, loss: float, seconds: float) -> bool:
        self.epoch_seconds.append(seconds)
        self.throughputs.append(self._samples / seconds if seconds > 0 else 0.0)
        self.losses.append(loss)
        self._emit(
            EpochEvent(
                epoch=epoch + 1,
                epochs=self._epochs,
                loss=loss,
                throughput=self.throughputs[-1],
                samples=(epoch + 1) * self._samples,
                total_samples=self._epochs * self._samples,
            )
        )
        if not math.isfinite(loss):
            self.diverged_at = epoch + 1
            return False
        return True

    def windows_done(self) -> None:
        """Tell the driver the timed windows are over: the next child may start importing."""
        self._emit(WindowsDoneEvent())

    def step_reporter(self, global_batch: int) -> StepReporter:
        """Called with the step count after each step: a progress event about once a second."""
        steps = self._samples // global_batch
        return StepReporter(self._emit, global_batch, steps * self._epochs)


class UtilizationSampler:
    """Samples each selected GPU's utilisation through NVML (``nvidia-ml-py``), if available."""

    def __init__(self, plan: DevicePlan) -> None:
        self._samples: list[list[int]] = [[] for _ in plan.gpu_indices]
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if plan.kind != "gpu":
            return
        try:
            import pynvml  # type: ignore[import-not-found]

            pynvml.nvmlInit()
            handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in plan.gpu_indices]
        except Exception:  # no NVML here: utilisation is simply not reported
            return

        def sample() -> None:
            while not self._stop.wait(0.1):
                for i, handle in enumerate(handles):
                    self._samples[i].append(int(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu))

        self._thread = threading.Thread(target=sample, name="tuner-nvml", daemon=True)
        self._thread.start()

    def stop(self) -> list[float] | None:
        """Mean utilisation (percent) per GPU while training, or ``None`` without NVML."""
        if self._thread is None:
            return None
        self._stop.set()
        self._thread.join()
        return [sum(s) / len(s) if s else 0.0 for s in self._samples]
