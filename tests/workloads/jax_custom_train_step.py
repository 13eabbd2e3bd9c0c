"""Customizing what happens in ``fit()`` with JAX (the keras-io guide): a ``keras.Model``
subclass with a stateless ``compute_loss_and_updates``, a ``train_step`` that applies the
gradients with ``stateless_apply`` and tracks the loss and the MAE, and a ``test_step`` whose
evaluation reports ``mae`` only (no ``loss``): searched with ``objective = "val_mae"``.
Written as the guide writes it, JAX, Keras and NumPy imported at the top; compiled in the build
with an optimizer only (the loss function is the model's own)."""

from __future__ import annotations

from typing import Any

import jax
import keras
import numpy as np


class CustomModel(keras.Model):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.loss_tracker = keras.metrics.Mean(name="loss")
        self.mae_metric = keras.metrics.MeanAbsoluteError(name="mae")
        self.loss_fn = keras.losses.MeanSquaredError()

    def compute_loss_and_updates(
        self,
        trainable_variables: Any,
        non_trainable_variables: Any,
        x: Any,
        y: Any,
        training: bool = False,
    ) -> Any:
        y_pred, non_trainable_variables = self.stateless_call(
            trainable_variables,
            non_trainable_variables,
            x,
            training=training,
        )
        loss = self.loss_fn(y, y_pred)
        return loss, (y_pred, non_trainable_variables)

    def train_step(self, state: Any, data: Any) -> Any:
        (
            trainable_variables,
            non_trainable_variables,
            optimizer_variables,
            metrics_variables,
        ) = state
        x, y = data

        # Get the gradient function.
        grad_fn = jax.value_and_grad(self.compute_loss_and_updates, has_aux=True)

        # Compute the gradients.
        (loss, (y_pred, non_trainable_variables)), grads = grad_fn(
            trainable_variables,
            non_trainable_variables,
            x,
            y,
            training=True,
        )

        # Update trainable variables and optimizer variables.
        (
            trainable_variables,
            optimizer_variables,
        ) = self.optimizer.stateless_apply(optimizer_variables, grads, trainable_variables)

        # Update metrics.
        loss_tracker_vars = metrics_variables[: len(self.loss_tracker.variables)]
        mae_metric_vars = metrics_variables[len(self.loss_tracker.variables) :]

        loss_tracker_vars = self.loss_tracker.stateless_update_state(loss_tracker_vars, loss)
        mae_metric_vars = self.mae_metric.stateless_update_state(mae_metric_vars, y, y_pred)

        logs = {}
        logs[self.loss_tracker.name] = self.loss_tracker.stateless_result(loss_tracker_vars)
        logs[self.mae_metric.name] = self.mae_metric.stateless_result(mae_metric_vars)

        new_metrics_vars = loss_tracker_vars + mae_metric_vars

        # Return metric logs and updated state variables.
        state = (
            trainable_variables,
            non_trainable_variables,
            optimizer_variables,
            new_metrics_vars,
        )
        return logs, state

    def test_step(self, state: Any, data: Any) -> Any:
        # Unpack the data.
        x, y = data
        (
            trainable_variables,
            non_trainable_variables,
            metrics_variables,
        ) = state

        # Compute predictions.
        y_pred, non_trainable_variables = self.stateless_call(
            trainable_variables,
            non_trainable_variables,
            x,
            training=False,
        )

        # Update the MAE only: the evaluation reports it alone, no loss.
        loss_tracker_vars = metrics_variables[: len(self.loss_tracker.variables)]
        mae_metric_vars = metrics_variables[len(self.loss_tracker.variables) :]
        mae_metric_vars = self.mae_metric.stateless_update_state(mae_metric_vars, y, y_pred)
        logs = {self.mae_metric.name: self.mae_metric.stateless_result(mae_metric_vars)}

        # Return metric logs and updated state variables.
        state = (
            trainable_variables,
            non_trainable_variables,
            loss_tracker_vars + mae_metric_vars,
        )
        return logs, state

    @property
    def metrics(self) -> list[Any]:
        # We list our `Metric` objects here so that `reset_states()` can be
        # called automatically at the start of each epoch.
        return [self.loss_tracker, self.mae_metric]


def build_model() -> Any:
    inputs = keras.Input(shape=(32,))
    outputs = keras.layers.Dense(1)(inputs)
    model = CustomModel(inputs, outputs)
    model.compile(optimizer="adam")
    return model


def load_data() -> tuple[np.ndarray, ...]:
    """Random inputs of 32 features and a target that depends on them (the guide's shapes)."""
    rng = np.random.default_rng(0)
    x = rng.random((1280, 32), dtype=np.float32)
    y = (x[:, :8].sum(axis=1, keepdims=True) / 8).astype("float32")
    return x[:1024], y[:1024], x[1024:], y[1024:]
