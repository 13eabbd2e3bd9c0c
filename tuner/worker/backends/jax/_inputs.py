"""Inside the child, under Keras on JAX: the input forms, turned into global NumPy batches.

Arrays are shuffled per pass with the run's seed; a ``PyDataset``, re-iterable iterable or
``tf.data`` dataset is re-cut at the trial's global batch (:func:`rebatch`), the user's order
kept. TensorFlow is imported only for the workload's own ``tf.data`` datasets.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from tuner.core.errors import WorkloadError
from tuner.core.protocol import Workload
from tuner.worker.sources import (
    ARRAY_NAMES,
    ARRAYS,
    DATASETS,
    ITERABLES,
    PART_NAMES,
    PYDATASETS,
    Source,
    as_arrays,
    call_data,
    check_arrays,
    describe,
    element_error,
    element_parts,
    leaves,
    map_leaves,
    pydataset_pass,
    pydataset_samples,
    refuse_shape_change,
    sample_shapes,
    split_pairs,
)

Batch = tuple[Any, ...]
Passes = Callable[[], Iterator[Batch]]
"""Starts one fresh pass over a split's batches."""


def load_source(workload: Workload) -> Source:
    """Call the workload's ``data`` and classify its form (:class:`WorkloadError` if unusable)."""
    if workload.dataset:
        raise WorkloadError(
            f"{workload.dataset} is a tf.data dataset function, TensorFlow's pattern: under "
            "backend = jax give data (arrays, PyDatasets or iterables of batches)"
        )
    reference = str(workload.data)
    data = split_pairs(call_data(reference))
    if isinstance(data, tuple | list) and len(data) == 4:
        arrays = tuple(as_arrays(item) for item in data)
        train_size, val_size = check_arrays(reference, arrays)
        for name, part in zip(ARRAY_NAMES, arrays, strict=True):
            _refuse_text(reference, name, part)
        return Source(
            ARRAYS,
            reference,
            train=arrays[:2],
            val=arrays[2:],
            train_size=train_size,
            val_size=val_size,
            shuffle=True,
        )
    if isinstance(data, tuple | list) and len(data) == 2:
        return _from_streams(reference, data[0], data[1])
    raise WorkloadError(
        f"{reference} must return (x_train, y_train, x_val, y_val) arrays or (train, val) "
        f"PyDatasets or iterables of (x, y) batches; it returned {describe(data)}"
    )


def _from_streams(reference: str, train: Any, val: Any) -> Source:
    (kind, size, passes), (val_kind, val_size, val_passes) = (
        _stream(reference, name, value) for name, value in (("train", train), ("val", val))
    )
    return Source(
        kind if kind == val_kind else ITERABLES,
        reference,
        train=passes,
        val=val_passes,
        train_size=None if size in (None, -1) else size,
        val_size=None if val_size in (None, -1) else val_size,
        train_infinite=size == -1,
        rebatched=True,
    )


def _stream(reference: str, name: str, value: Any) -> tuple[str, int | None, Passes]:
    """(form, size in samples — ``None`` unknown, ``-1`` infinite —, pass starter) of a split."""
    import keras

    if isinstance(value, keras.utils.PyDataset):
        size = pydataset_samples(value)
        return PYDATASETS, size, lambda: _checked(reference, name, pydataset_pass(value))
    if _is_tf_dataset(value):
        return _tf_stream(reference, name, value)
    if isinstance(value, str | bytes | np.ndarray | Mapping) or not hasattr(value, "__iter__"):
        raise WorkloadError(
            f"{reference}: the {name} part must be a keras.utils.PyDataset or an iterable of "
            f"(x, y) batches; it is {describe(value)}"
        )
    if iter(value) is value:
        raise WorkloadError(
            f"{reference}: the {name} part is a one-shot iterator ({type(value).__name__}); "
            "tuner reads the data more than once: give a list of batches, a PyDataset or an "
            "object whose __iter__ starts a new pass"
        )
    size = sum(length(batch) for batch in value) if isinstance(value, list | tuple) else None
    return ITERABLES, size, lambda: _checked(reference, name, iter(value))


def _is_tf_dataset(value: Any) -> bool:
    # Without importing TensorFlow: a tf.data dataset's class lives in tensorflow's modules.
    return type(value).__module__.startswith("tensorflow") and hasattr(value, "element_spec")


def _tf_stream(reference: str, name: str, dataset: Any) -> tuple[str, int | None, Passes]:
    """A workload's ``tf.data`` dataset read as NumPy batches (an unbatched one in 256s)."""
    from tuner.worker.backends.jax._no_tensorflow import reveal_tensorflow
    from tuner.worker.tfdata import is_batched, samples_before_batching

    reveal_tensorflow()
    _refuse_tf_kinds(reference, name, dataset.element_spec)
    cardinality = int(dataset.cardinality())
    if is_batched(dataset):
        size = samples_before_batching(dataset)
    else:
        size = cardinality if cardinality >= 0 else None
        dataset = dataset.batch(256)
    return (
        DATASETS,
        -1 if cardinality == -1 else size,
        lambda: _checked(reference, name, iter(dataset.as_numpy_iterator())),
    )


def _refuse_tf_kinds(reference: str, name: str, spec: Any) -> None:
    """Strings and ragged or sparse tensors have no JAX form: refused from the element spec."""
    import tensorflow as tf

    for leaf in tf.nest.flatten(spec):
        if getattr(leaf, "dtype", None) == tf.string:
            _refuse_text(reference, f"the {name} dataset", np.array(["text"]))
        if not isinstance(leaf, tf.TensorSpec):
            raise WorkloadError(
                f"{reference}: the {name} dataset holds {type(leaf).__name__.removesuffix('Spec')}"
                " values; Keras on JAX takes dense arrays only: use backend = tensorflow, or pad "
                "them in the data function"
            )


def _checked(reference: str, name: str, batches: Iterator[Any]) -> Iterator[Batch]:
    """The batches as tuples of NumPy structures, as Keras unpacks them (``x``, ``(x, y)``,
    ``(x, y, sample_weight)``); other tuples, and text, are refused."""
    first = None
    for index, batch in enumerate(batches):
        if (problem := element_error(batch)) is not None:
            raise WorkloadError(f"{reference}: the {name} batches' {problem}")
        parts = _map(np.asarray, element_parts(batch))
        for part_name, part in zip(PART_NAMES, parts, strict=False):
            _refuse_text(reference, f"the {name} {part_name}", part)
        first = first if first is not None else sample_shapes(parts)
        refuse_shape_change(reference, first, parts, index)
        yield parts


TEXT_KINDS = frozenset("USOV")
"""NumPy dtype kinds of text (unicode, bytes, Python objects such as ``str``, void)."""


def _refuse_text(reference: str, name: str, part: Any) -> None:
    """Keras on JAX has no string tensors: text is refused up front, with what to do instead."""
    kinds = {np.asarray(leaf).dtype.kind for leaf in leaves(part)}
    if kinds & TEXT_KINDS:
        raise WorkloadError(
            f"{reference}: {name} holds strings or Python objects; Keras on JAX has no string "
            "tensors: use backend = tensorflow for a model that takes raw strings, or turn them "
            "into numbers (token ids, padded arrays) in the data function"
        )


def train_batches(source: Source, global_batch: int, seed: int | None) -> Iterator[Batch]:
    """Global batches of exactly ``global_batch``, without end; arrays reshuffled each pass."""
    if source.form == ARRAYS:
        return _shuffled(source.train, global_batch, np.random.default_rng(seed))
    return rebatch(source.train, global_batch, repeat=True)


def _shuffled(arrays: Batch, size: int, rng: np.random.Generator) -> Iterator[Batch]:
    n = length(arrays)
    if n < size:
        raise WorkloadError(f"global batch {size} is larger than the training set ({n} samples)")
    while True:
        order = rng.permutation(n)
        for start in range(0, n - size + 1, size):
            yield _map(operator.itemgetter(order[start : start + size]), arrays)


def rebatch(
    passes: Passes, size: int, repeat: bool, drop_remainder: bool = True
) -> Iterator[Batch]:
    """The batches of ``passes()`` re-cut at ``size`` samples; with ``repeat``, pass after pass
    without end (a pass's remainder is dropped, or kept as a last smaller batch)."""
    while True:
        pending: list[Batch] = []
        held = 0
        produced = False
        for batch in passes():
            pending.append(batch)
            held += length(batch)
            while held >= size:
                joined = _concat(pending)
                yield slice_batch(joined, 0, size)
                produced = True
                held -= size
                pending = [slice_batch(joined, size, size + held)] if held else []
        if held and not drop_remainder:
            yield _concat(pending)
        if not repeat:
            return
        if not produced:
            raise WorkloadError(f"a pass over the training data holds fewer than {size} samples")


def val_arrays(source: Source, val_samples: int | None) -> Batch:
    """The fixed validation set as arrays: its first ``val_samples`` samples, in order."""
    if source.form == ARRAYS:
        return slice_batch(source.val, 0, val_samples)
    if val_samples is not None:
        return first_batch(source, "val", val_samples)
    taken = list(source.val())
    if not taken:
        raise WorkloadError(f"{source.reference}: the val data are empty")
    return _concat(taken)


def first_batch(source: Source, split: str, size: int) -> Batch:
    """The first ``size`` samples of ``split`` as NumPy arrays in the element's own structure."""
    data = source.train if split == "train" else source.val
    if source.form == ARRAYS:
        return slice_batch(data, 0, size)
    first = next(rebatch(data, size, repeat=False, drop_remainder=False), None)
    if first is None:
        raise WorkloadError(f"{source.reference}: the {split} data are empty")
    return first


def _map(function: Callable[[Any], Any], batch: Batch) -> Batch:
    """``function`` over every array of every part of ``batch``."""
    return tuple(map_leaves(function, part) for part in batch)


def length(batch: Any) -> int:
    """Samples in a batch: its first array's length."""
    return int(np.shape(leaves(batch)[0])[0])


def slice_batch(batch: Batch, start: int, stop: int | None) -> Batch:
    return _map(lambda a: a[start:stop], batch)


def _concat(batches: list[Batch]) -> Batch:
    """Batches of one structure joined along their first axis."""
    if len(batches) == 1:
        return batches[0]
    found = [leaves(batch) for batch in batches]
    joined = iter([np.concatenate(parts) for parts in zip(*found, strict=True)])
    return _map(lambda _: next(joined), batches[0])


def refuse_across_replicas(source: Source, replicas: int) -> None:
    """Nothing more: what JAX has no form for is refused on one device already, when read."""
