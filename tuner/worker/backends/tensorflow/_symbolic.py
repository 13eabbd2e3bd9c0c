"""Inside the child: build a model for ``fit`` under ``MirroredStrategy`` from one local batch.

Keras 3.15's TensorFlow trainer builds the model symbolically from one batch it gets by
*averaging* the replicas' shards (``_maybe_symbolic_build``), so ``fit`` fails on two replicas
for a model that takes raw text (tensorflow/tensorflow#80951). The build needs only shapes and
dtypes, which one undistributed batch gives exactly.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf


def build_from_local_batch(model: Any, strategy: Any, dataset: Any) -> bool:
    """Build ``model`` from the first batch of ``dataset`` where Keras's own build would average
    string batches; ``True`` if it did (a distributed stream, or a Keras without these private
    steps, is left to Keras). The model keeps the stand-in: ``evaluate`` would average them too."""
    if not isinstance(dataset, tf.data.Dataset) or not _has_private_build(model):
        return False
    specs = tf.nest.flatten(dataset.element_spec, expand_composites=False)
    if not any(getattr(spec, "dtype", None) == tf.string for spec in specs):
        return False
    batch = next(iter(dataset.take(1)))
    with strategy.scope():
        model._symbolic_build(data_batch=batch)
    # Built now: Keras's own pre-build (the average of the replicas' batches) has nothing to
    # do, and is the step that cannot take strings.
    model._maybe_symbolic_build = _already_built
    return True


def skip_prebuild_once_built(model: Any) -> None:
    """Leave out Keras's pre-build in ``evaluate`` once training built ``model``, its loss and
    metrics: it averages the replicas' first batches, which fails when they differ in size (61
    validation rows at a global batch of 64 on 2 replicas: ``AddN ... must have the same size``)."""
    if not _has_private_build(model):
        return
    compiled = [getattr(model, name, None) for name in ("_compile_loss", "_compile_metrics")]
    if all(layer.built for layer in model._flatten_layers()) and all(
        part is None or part.built for part in compiled
    ):
        model._maybe_symbolic_build = _already_built


def _has_private_build(model: Any) -> bool:
    return all(hasattr(model, name) for name in ("_symbolic_build", "_maybe_symbolic_build"))


def _already_built(iterator: Any = None, data_batch: Any = None) -> None:
    return None
