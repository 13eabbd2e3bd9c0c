"""Statistical efficiency: the gradient noise scale from replica gradients, the critical batch,
and goodput (``docs/design/measurement.md``, "Statistical efficiency"). Pure; the measurement
runs in the child. Only ``B_simple = EMA(S) / EMA(|G|²)`` (McCandlish et al. 2018, from the
replicas' gradients and their mean) is stored: the critical batch is read off it, never stored.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

DEFAULT_BETA = 0.95
"""EMA weight of the past: about the last 40 measurement steps count (the per-step estimates are
noisy: the numerator's relative spread per step is about sqrt(2 / dimensions))."""

ROUNDING = 1e-5
"""Relative gap between ``mean‖g_i‖²`` and ``‖ḡ‖²`` taken as none: float32 sums on the device,
so identical replicas' gradients read ``S = 0`` rather than rounding noise."""


def step_estimates(
    replicas: int, per_replica_batch: int, mean_sq: float, mean_grad_sq: float
) -> tuple[float, float]:
    """One step's unbiased ``(|G|², S)`` from ``mean‖g_i‖²`` and ``‖ḡ‖²``."""
    if replicas < 2:
        raise ValueError("the gradient noise scale needs at least 2 replicas")
    n, b = replicas, per_replica_batch
    if abs(mean_sq - mean_grad_sq) <= ROUNDING * max(abs(mean_sq), abs(mean_grad_sq)):
        mean_sq = mean_grad_sq  # a difference float32 sums cannot resolve is no noise
    g2 = (n * mean_grad_sq - mean_sq) / (n - 1)
    s = n * b * (mean_sq - mean_grad_sq) / (n - 1)
    return g2, s


@dataclass
class NoiseScale:
    """``B_simple`` from per-step estimates: bias-corrected EMAs of ``S`` and ``|G|²`` apart."""

    beta: float = DEFAULT_BETA
    _s: float = 0.0
    _g2: float = 0.0
    _steps: int = 0
    history: list[float | None] = field(default_factory=list)

    def update(self, g2: float, s: float) -> None:
        """Add one step's estimates."""
        self._steps += 1
        self._s = self.beta * self._s + (1 - self.beta) * s
        self._g2 = self.beta * self._g2 + (1 - self.beta) * g2

    def add_steps(
        self, replicas: int, per_replica_batch: int, steps: Iterable[tuple[Any, Any]]
    ) -> None:
        """Add each step's ``(mean‖g_i‖², ‖ḡ‖²)``; a step with non-finite estimates is skipped."""
        for mean_sq, mean_grad_sq in steps:
            g2, s = step_estimates(replicas, per_replica_batch, float(mean_sq), float(mean_grad_sq))
            if math.isfinite(g2) and math.isfinite(s):
                self.update(g2, s)

    @property
    def steps(self) -> int:
        """How many steps' estimates were added."""
        return self._steps

    @property
    def value(self) -> float | None:
        """The current ``B_simple`` (``None`` before a step, or while ``|G|²`` or ``S`` is not
        positive: the gradient is lost in the noise, or the noise in the estimate)."""
        if not self._steps or self._g2 <= 0 or self._s <= 0:
            return None
        correction = 1 - self.beta**self._steps  # the same for both: it cancels in the ratio
        return (self._s / correction) / (self._g2 / correction)

    @property
    def why_none(self) -> str | None:
        """Why :attr:`value` is ``None`` after measuring, in one line a trial stores."""
        if not self._steps or self.value is not None:
            return None
        lost = "|G|² (the gradient is lost in the noise)" if self._g2 <= 0 else "S (the noise)"
        return (
            f"measured on {self._steps} steps, but the estimate of {lost} is not positive: "
            "too few steps for this model's gradients; raise noise_scale_steps"
        )

    def mark_epoch(self) -> None:
        """Record the value at the end of an epoch."""
        self.history.append(self.value)


def statistical_efficiency(noise_scale: float, base_batch: int, batch: int) -> float:
    """``E(B) = (B_noise + B₀) / (B_noise + B)``: progress per sample relative to ``B₀``."""
    if noise_scale < 0 or not math.isfinite(noise_scale):
        raise ValueError(f"noise scale must be finite and non-negative, got {noise_scale}")
    return (noise_scale + base_batch) / (noise_scale + batch)


def goodput(throughput: float, noise_scale: float, base_batch: int, batch: int) -> float:
    """Throughput weighted by statistical efficiency (samples/s worth of base-batch progress)."""
    return throughput * statistical_efficiency(noise_scale, base_batch, batch)
