"""Inside the child: what a training run measures besides its loss — epoch times and throughput
(:class:`Meter`), the first epoch's tracing, the input pipeline alone and GPU utilisation.

Backend-neutral: no framework import (each backend reads its own device memory peaks)."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any

from tuner.core.devices import DevicePlan
from tuner.core.progress import StepReporter
from tuner.core.protocol import EPOCH_EVENT
from tuner.core.windows import warmup_excess

Emit = Callable[[dict[str, Any]], None]


def split_tracing(epoch_seconds: list[float], fit_s: float) -> dict[str, float]:
    """Split fit time into tracing (the warm-up windows' excess over a steady one: tracing,
    compilation, a recompilation) and training."""
    tracing = warmup_excess(epoch_seconds)
    return {"tracing_s": tracing, "training_s": fit_s - tracing}


def auto_noise_steps(epoch_steps: int) -> int:
    """Measurement steps per epoch when not set: 1 % of the epoch's steps, between 2 and 16 (a
    measurement step costs about three training steps: the cost stays near 3 %)."""
    return max(2, min(16, round(0.01 * epoch_steps)))


def input_throughput(
    stream: Any, steps: int, global_batch: int, wait: Callable[[Any], Any]
) -> float:
    """Samples per second the input pipeline delivers alone: ``steps`` batches of a fresh
    iterator with no training in between, after ``steps`` more that start the pipeline (its
    parallel calls and prefetch buffers tune themselves, as during training's first window).
    ``wait(batch)`` returns once a batch is really there (on its devices)."""
    iterator = iter(stream)
    for _ in range(steps):
        last = next(iterator)
    mark = time.perf_counter()
    for _ in range(steps):
        last = next(iterator)
    wait(last)
    seconds = time.perf_counter() - mark
    return steps * global_batch / seconds if seconds > 0 else 0.0


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
            {
                "event": EPOCH_EVENT,
                "epoch": epoch + 1,
                "epochs": self._epochs,
                "loss": loss,
                "throughput": self.throughputs[-1],
                "samples": (epoch + 1) * self._samples,
                "total_samples": self._epochs * self._samples,
            }
        )
        if not math.isfinite(loss):
            self.diverged_at = epoch + 1
            return False
        return True

    def step_reporter(self, global_batch: int) -> StepReporter:
        """What the loop calls with the run's step count after each step: a progress event
        about once a second (:class:`tuner.core.progress.StepReporter`)."""
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
