"""A small KerasTuner hypermodel, written the way KerasTuner's documentation writes them: the
built-in regression MLP with its width, activation, L2 penalty and an optional dropout layer as
hyperparameters. ``studies/hypermodel.toml`` runs it through tuner unchanged."""

from __future__ import annotations

from typing import Any

from tuner.workloads.regression import N_FEATURES, load_data

__all__ = ["build_model", "load_data"]


def build_model(hp: Any) -> Any:
    """``build(hp)``: the model KerasTuner would build for ``hp`` (compiled, as its docs do)."""
    import keras

    model = keras.Sequential(name="hyper_mlp")
    model.add(keras.Input(shape=(N_FEATURES,)))
    model.add(
        keras.layers.Dense(
            units=hp.Int("units", min_value=32, max_value=128, step=32),
            activation=hp.Choice("activation", ["relu", "tanh"]),
            kernel_regularizer=keras.regularizers.L2(
                hp.Float("l2", min_value=1e-6, max_value=1e-3, sampling="log")
            ),
        )
    )
    if hp.Boolean("dropout"):
        with hp.conditional_scope("dropout", [True]):
            model.add(keras.layers.Dropout(rate=hp.Float("rate", 0.1, 0.3, step=0.1)))
    model.add(keras.layers.Dense(32, activation="relu"))
    model.add(keras.layers.Dense(1))
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=1e-3), loss="mse", metrics=["mae"])
    return model
