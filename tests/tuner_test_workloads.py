"""Small workloads for the tests (importable as ``tuner_test_workloads:...`` from tests/)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tuner.workloads import regression


def small_regression_data() -> tuple[np.ndarray, ...]:
    """The built-in regression data, smaller: 4,096 training and 1,024 validation samples."""
    return regression.make_data(n_train=4096, n_val=1024)


def wide_model() -> Any:
    """64 -> Dense(8192) -> 1: its activations grow fast with the batch (out-of-memory tests)."""
    import keras

    return keras.Sequential(
        [
            keras.Input(shape=(64,)),
            keras.layers.Dense(8192, activation="relu"),
            keras.layers.Dense(1),
        ]
    )


def wide_data() -> tuple[np.ndarray, ...]:
    """16,384 + 1,024 samples of 64 features for :func:`wide_model`."""
    rng = np.random.default_rng(0)
    x = rng.random((17_408, 64), dtype=np.float32)
    y = x[:, :1] * 2.0 - x[:, 1:2]
    return x[:16_384], y[:16_384], x[16_384:], y[16_384:]


def raising_data() -> tuple[np.ndarray, ...]:
    """A data function that fails, as a user's loader might."""
    raise FileNotFoundError("no such file: /data/train.npz")


def mismatched_data() -> tuple[np.ndarray, ...]:
    """Data with 7 features for a model that expects 10."""
    rng = np.random.default_rng(0)
    return (
        rng.random((512, 7), dtype=np.float32),
        rng.random((512, 1), dtype=np.float32),
        rng.random((64, 7), dtype=np.float32),
        rng.random((64, 1), dtype=np.float32),
    )


def tuned_mlp(hp: Any) -> Any:
    """A ``build(hp)`` as in KerasTuner's documentation: Int, Choice, Float with log sampling,
    a conditional scope; uncompiled."""
    import keras

    model = keras.Sequential([keras.Input(shape=(10,))])
    model.add(
        keras.layers.Dense(
            hp.Int("units", min_value=16, max_value=48, step=16),
            activation=hp.Choice("activation", ["relu", "tanh"]),
            kernel_regularizer=keras.regularizers.L2(
                hp.Float("l2", min_value=1e-6, max_value=1e-3, sampling="log")
            ),
        )
    )
    if hp.Boolean("dropout"):
        with hp.conditional_scope("dropout", [True]):
            model.add(keras.layers.Dropout(hp.Float("rate", 0.1, 0.3, step=0.1)))
    model.add(keras.layers.Dense(1))
    return model


def _compiled(hp: Any) -> Any:
    import keras

    model = tuned_mlp(hp)
    model.compile(
        optimizer=keras.optimizers.SGD(learning_rate=0.5, momentum=0.7), loss="mae", metrics=["mse"]
    )
    return model


def compiled_mlp(hp: Any) -> Any:
    """:func:`tuned_mlp` compiled by the user: SGD with momentum 0.7 at a learning rate of 0.5
    (tuner must replace the rate and keep the momentum), MAE loss, an MSE metric."""
    return _compiled(hp)


def _hypermodel_classes() -> tuple[Any, Any]:
    import keras_tuner

    class TunedMLP(keras_tuner.HyperModel):
        def build(self, hp: Any) -> Any:
            return tuned_mlp(hp)

    class BatchSettingMLP(TunedMLP):
        def fit(self, hp: Any, model: Any, *args: Any, **kwargs: Any) -> Any:
            return model.fit(*args, batch_size=hp.Choice("batch_size", [32, 64]), **kwargs)

    return TunedMLP, BatchSettingMLP


TunedMLP, BatchSettingMLP = _hypermodel_classes()
tuned_instance = TunedMLP()


def wide_hypermodel(hp: Any) -> Any:
    """:func:`wide_model` with its width as a hyperparameter: 8192 runs out of memory at global
    batch 4096 under a 128 MiB cap per device, 256 does not."""
    import keras

    return keras.Sequential(
        [
            keras.Input(shape=(64,)),
            keras.layers.Dense(hp.Choice("width", [8192, 256]), activation="relu"),
            keras.layers.Dense(1),
        ]
    )


def plain_model() -> Any:
    """The built-in regression model: a plain builder, no hyperparameters."""
    return regression.build_model()


# The analytic noise-scale problem: y = x·w* + ε, x ~ N(0, I_p), ε ~ N(0, σ²), a linear model
# without bias held at w = w* + d. Its true B_simple is ((p + 1)‖d‖² + pσ²) / ‖d‖².
ANALYTIC_P = 64
ANALYTIC = {"a": (1.0, 1.0), "b": (0.25, 1.0), "c": (1.0, 0.25)}  # name -> (‖d‖², σ²)


def _w_star() -> np.ndarray:
    return np.random.default_rng(7).normal(size=(ANALYTIC_P, 1)).astype(np.float32)


def _linear(d_squared: float) -> Any:
    import keras

    direction = np.random.default_rng(11).normal(size=(ANALYTIC_P, 1))
    d = direction / np.linalg.norm(direction) * np.sqrt(d_squared)
    w = (_w_star() + d).astype(np.float32)
    return keras.Sequential(
        [
            keras.Input(shape=(ANALYTIC_P,)),
            keras.layers.Dense(
                1, use_bias=False, kernel_initializer=keras.initializers.Constant(w)
            ),
        ]
    )


def _linear_data(sigma_squared: float) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(20_480, ANALYTIC_P)).astype(np.float32)
    y = x @ _w_star() + rng.normal(scale=np.sqrt(sigma_squared), size=(20_480, 1))
    y = y.astype(np.float32)
    return x[:16_384], y[:16_384], x[16_384:], y[16_384:]


def analytic_model_a() -> Any:
    return _linear(ANALYTIC["a"][0])


def analytic_data_a() -> tuple[np.ndarray, ...]:
    return _linear_data(ANALYTIC["a"][1])


def analytic_model_b() -> Any:
    return _linear(ANALYTIC["b"][0])


def analytic_data_b() -> tuple[np.ndarray, ...]:
    return _linear_data(ANALYTIC["b"][1])


def analytic_model_c() -> Any:
    return _linear(ANALYTIC["c"][0])


def analytic_data_c() -> tuple[np.ndarray, ...]:
    return _linear_data(ANALYTIC["c"][1])
