"""A workload's own ``tf.data`` datasets: whether one is batched (imports TensorFlow if asked)."""

from __future__ import annotations

from typing import Any

_BATCHING = ("_BatchDataset", "_ParallelBatchDataset", "_PaddedBatchDataset", "_RebatchDataset")


def is_batched(dataset: Any) -> bool:
    """Whether ``dataset``'s elements are batches (from its transformations, else its shapes)."""
    node = dataset
    while node is not None:
        kind = type(node).__name__
        if kind == "_UnbatchDataset":
            return False
        if kind in _BATCHING:
            return True
        node = getattr(node, "_input_dataset", None)
    import tensorflow as tf

    specs = tf.nest.flatten(dataset.element_spec)
    return all(spec.shape.rank and spec.shape[0] is None for spec in specs)


def samples_before_batching(dataset: Any) -> int | None:
    """How many samples a batched ``dataset`` holds, from its transformations; ``None`` where not
    known (a ``filter`` or ``repeat`` after the batching, a generator before it)."""
    import tensorflow as tf

    batches = _known(dataset.cardinality())
    node = dataset
    while node is not None and type(node).__name__ not in _BATCHING:
        node = getattr(node, "_input_dataset", None)
    source = getattr(node, "_input_dataset", None)
    if batches is None or source is None or _known(node.cardinality()) != batches:
        return None
    samples = _known(source.cardinality())
    batch_size = getattr(node, "_batch_size", None)
    drop = getattr(node, "_drop_remainder", None)
    if samples is None or batch_size is None or drop is None:
        return None
    if bool(tf.get_static_value(drop)):
        return batches * int(tf.get_static_value(batch_size))
    return samples


def _known(cardinality: Any) -> int | None:
    value = int(cardinality)
    return value if value >= 0 else None  # INFINITE (-1) and UNKNOWN (-2) are negative
