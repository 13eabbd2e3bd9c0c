"""A workload's own ``tf.data`` datasets, as either backend reads them: whether one is batched.

TensorFlow batches them itself; Keras on JAX reads them as NumPy batches when the user's data
are ``tf.data`` (and so TensorFlow is imported already). Imports TensorFlow only when asked.
"""

from __future__ import annotations

from typing import Any

_BATCHING = ("_BatchDataset", "_ParallelBatchDataset", "_PaddedBatchDataset", "_RebatchDataset")


def is_batched(dataset: Any) -> bool:
    """Whether ``dataset``'s elements are batches (its last batching step is not undone).

    Walks the dataset's own transformations; a dataset built some other way counts as batched when
    every component has an unknown leading dimension (``batch`` without ``drop_remainder``).
    """
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
