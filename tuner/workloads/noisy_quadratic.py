"""The noisy quadratic model: a linear regression whose best learning rate per batch is known.

Inputs are Gaussian with a known diagonal covariance (``SPECTRUM``, from 1 down to 0.05), labels
``y = x · W_STAR + noise`` with planted noise of variance ``LABEL_NOISE``; the model is one
``Dense(1)`` without bias, starting at zero, trained on the mean squared error with SGD. For
this model the expected loss after SGD is exact (:func:`expected_losses`): with ``d = w - W_STAR``
and ``D = E[d dᵀ]``, one step of rate ``η`` at batch ``B`` gives (Gaussian fourth moments)

    D_ii <- (1 - 2 η h_i)² D_ii + (4 η² / B) (h_i² D_ii + (Σ_j h_j D_jj + σ²) h_i),

and the loss is ``Σ h_i D_ii + σ²`` (Zhang et al. 2019, "Which algorithmic choices matter at
which batch sizes?"). With a fixed budget of samples, the best rate grows about linearly with the
batch below the critical batch and flattens near the stability limit ``1 / h_max`` above it.

Train it with ``loss = "mse"``, ``optimizer = "sgd"`` and ``train_samples = TRAIN_SAMPLES``
(one pass over fresh samples, as the recursion assumes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

N_FEATURES = 32
SPECTRUM = np.geomspace(1.0, 0.05, N_FEATURES)
"""The inputs' variances: the curvatures of the loss (largest 1: SGD diverges past rate 1)."""
LABEL_NOISE = 0.01
"""The planted label noise's variance: the lowest loss any model reaches."""
W_STAR = np.random.default_rng(0).normal(size=N_FEATURES)
TRAIN_SAMPLES = 1024
"""The sample budget the exact curve is computed for (``[search] train_samples``)."""
N_TRAIN = 16_384
N_VAL = 16_384


def build_model() -> Any:
    """One ``Dense(1)`` without bias, from zero weights (the recursion's start, exactly)."""
    import keras

    return keras.Sequential(
        [
            keras.Input(shape=(N_FEATURES,)),
            keras.layers.Dense(1, use_bias=False, kernel_initializer="zeros"),
        ],
        name="noisy_quadratic",
    )


def make_data(
    n_train: int = N_TRAIN, n_val: int = N_VAL, seed: int = 1
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(x_train, y_train, x_val, y_val)``: Gaussian inputs, labels with planted noise."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n_train + n_val, N_FEATURES)) * np.sqrt(SPECTRUM)
    y = x @ W_STAR + rng.normal(scale=np.sqrt(LABEL_NOISE), size=n_train + n_val)
    x32, y32 = x.astype(np.float32), y.astype(np.float32)[:, None]
    return x32[:n_train], y32[:n_train], x32[n_train:], y32[n_train:]


def load_data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The data set: 16,384 training samples (more than one budget) and 16,384 validation."""
    return make_data()


def expected_losses(
    rates: Sequence[float] | np.ndarray, batch: int, samples: int = TRAIN_SAMPLES
) -> np.ndarray:
    """The exact expected loss after ``samples // batch`` SGD steps at each rate (``inf``:
    diverged)."""
    lrs = np.asarray(rates, dtype=float)[:, None]
    second = np.tile(W_STAR**2, (lrs.shape[0], 1))  # D at w = 0
    h = SPECTRUM
    for _ in range(max(1, samples // batch)):
        trace = np.sum(h * second, axis=1, keepdims=True)
        second = (1 - 2 * lrs * h) ** 2 * second + (4 * lrs**2 / batch) * (
            h * h * second + (trace + LABEL_NOISE) * h
        )
        second = np.minimum(second, 1e30)
    loss = np.sum(h * second, axis=1) + LABEL_NOISE
    return np.where(loss < 1e20, loss, np.inf)


def optimal_rate(batch: int, samples: int = TRAIN_SAMPLES) -> float:
    """The rate of the lowest expected loss at ``batch`` (a grid of 400, then refined)."""
    rates = np.geomspace(1e-3, 1.0, 400)
    j = int(np.argmin(expected_losses(rates, batch, samples)))
    fine = np.geomspace(rates[max(j - 1, 0)], rates[min(j + 1, len(rates) - 1)], 200)
    return float(fine[int(np.argmin(expected_losses(fine, batch, samples)))])


def critical_batch(samples: int = TRAIN_SAMPLES, batches: Sequence[int] = (2, 4, 256)) -> float:
    """Where the small-batch line of the best rate, ``lr*(B) ≈ c · B``, meets its plateau
    ``lr*(∞)``: ``B_crit = lr*(∞) / c`` (``batches``: small, smaller, deep in the plateau)."""
    small, _, large = batches
    slope = optimal_rate(small, samples) / small
    return optimal_rate(large, samples) / slope
