"""The noisy quadratic model as a Keras workload, for ``tuner lr-find``'s tests: linear
regression (one ``Dense(1)`` without bias, from zero weights) on Gaussian inputs with a known
covariance spectrum and planted label noise, trained with SGD on the mean squared error — the
build compiles it, so the range test uses the user's compiled optimizer.

The loss's curvature is ``2 * EIGENVALUES``: plain gradient descent diverges above
``2 / (2 * max(EIGENVALUES))`` = :data:`DIVERGES_ABOVE`. :func:`best_fixed_rate` simulates the
same minibatch SGD in NumPy over a grid of fixed rates."""

from __future__ import annotations

from typing import Any

import numpy as np

DIM = 16
EIGENVALUES = np.geomspace(1.0, 1e-2, DIM)
NOISE = 0.5
DIVERGES_ABOVE = 1.0 / float(EIGENVALUES.max())
N_TRAIN, N_VAL = 8192, 512


def build_model() -> Any:
    """The linear model, compiled with SGD and the mean squared error."""
    import keras

    model = keras.Sequential(
        [
            keras.Input(shape=(DIM,)),
            keras.layers.Dense(1, use_bias=False, kernel_initializer="zeros"),
        ]
    )
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.01), loss="mse")
    return model


def _draw(rng: np.random.Generator, n: int, w_star: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = rng.normal(size=(n, DIM)) * np.sqrt(EIGENVALUES)
    y = x @ w_star + NOISE * rng.normal(size=n)
    return x.astype("float32"), y.reshape(-1, 1).astype("float32")


def load_data() -> tuple[np.ndarray, ...]:
    """(x_train, y_train, x_val, y_val) of the noisy quadratic, seeded."""
    rng = np.random.default_rng(0)
    w_star = rng.normal(size=DIM)
    return (*_draw(rng, N_TRAIN, w_star), *_draw(rng, N_VAL, w_star))


def best_fixed_rate(steps: int, batch: int, seeds: int = 3) -> float:
    """The fixed SGD rate (of 31 log-spaced in [1e-3, 1]) with the lowest expected loss after
    ``steps`` steps at ``batch``, simulated exactly in NumPy (fresh samples each step)."""
    grid = np.geomspace(1e-3, 1.0, 31)
    finals = []
    for lr in grid:
        runs = []
        for seed in range(seeds):
            rng = np.random.default_rng(100 + seed)
            w_star, w = rng.normal(size=DIM), np.zeros(DIM)
            for _ in range(steps):
                x, y = _draw(rng, batch, w_star)
                w = w - lr * 2 / batch * x.T.astype(float) @ (x @ w - y[:, 0])
            runs.append(float(np.sum(EIGENVALUES * (w - w_star) ** 2)) + NOISE**2)
        finals.append(np.mean(runs) if np.isfinite(runs).all() else np.inf)
    return float(grid[int(np.argmin(finals))])
