"""Inside the child: the validation loss (or the objective's value) on TensorFlow, over one
input pipeline built once.

Keras's ``model.evaluate(dataset)`` opens a new multi-device iterator on every call, tracing its
``tf.data`` functions again (about 0.7 s a call on the built-in workload, several times the
pass). :class:`ValidationPass` distributes the batches once and runs one pass per call through
the model's own test function: the same samples, batches and loss as ``evaluate``.

A last batch that does not split evenly over the replicas is evaluated whole: the test step
weighs each replica's mean by its own rows, so the loss is exact (measured equal to one device's
to float32 rounding). Only ``evaluate``'s pre-build cannot take it: left out once trained.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tuner.worker.backends.tensorflow._symbolic import skip_prebuild_once_built
from tuner.worker.session import scalar_logs


class ValidationPass:
    """Evaluates ``model`` over the validation set ``val`` (``batches``), a whole pass a call."""

    def __init__(
        self, model: Any, val: Any, batches: int, key: str = "loss", logs: dict | None = None
    ) -> None:
        self._model = model
        self._batches = batches
        self._key = key
        self._logs = {} if logs is None else logs
        # Batched before it is repeated: every pass starts at the first sample.
        distributed = model.distribute_strategy.experimental_distribute_dataset(val.repeat())
        self._iterator = iter(distributed)

    def __call__(self) -> float:
        model = self._model
        model.make_test_function()
        model.reset_metrics()
        logs: dict[str, Any] = {}
        for _ in range(self._batches):
            logs = model.test_function(self._iterator)
        # As evaluate does: the metrics' own result, which holds every batch, not the last's.
        metrics = model.get_metrics_result()
        _keep(self._logs, {**logs, **metrics})
        return float(metrics[self._key] if self._key in metrics else logs[self._key])


def evaluator(
    model: Any, val: Any, key: str = "loss", logs: dict | None = None
) -> Callable[[], float]:
    """A :class:`ValidationPass`, or Keras's own ``evaluate`` where the batches are unknown or a
    test call runs several (``steps_per_execution``). ``logs``: filled with each evaluation's."""
    batches = int(val.cardinality())
    if batches > 0 and getattr(model, "steps_per_execution", 1) == 1:
        return ValidationPass(model, val, batches, key, logs)
    return lambda: keras_evaluate(model, val, key, logs)


def _keep(into: dict, logs: dict) -> None:
    into.clear()
    into.update(scalar_logs(logs))


def keras_evaluate(model: Any, val: Any, key: str = "loss", logs: dict | None = None) -> float:
    """Keras's ``evaluate`` of the trained model (its ``key``: the objective's), without its
    pre-build (:func:`._symbolic.skip_prebuild_once_built`)."""
    skip_prebuild_once_built(model)
    found = model.evaluate(val, verbose=0, return_dict=True)
    if logs is not None:
        _keep(logs, found)
    return float(found[key])
