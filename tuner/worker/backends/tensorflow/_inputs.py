"""The input layer: every form a workload's data can take, turned into the batches a trial uses
(batched datasets unbatched and batched again at the trial's global batch). Nothing here reads
a whole dataset: sizes come from ``cardinality``, checks read the first batches.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from tuner.core.errors import WorkloadError, error_line
from tuner.core.protocol import Workload
from tuner.worker.sources import (
    ARRAYS,
    DATASETS,
    FUNCTION,
    PYDATASETS,
    Source,
    as_arrays,
    call_data,
    check_arrays,
    describe,
    element_error,
    element_parts,
    pydataset_pass,
    pydataset_samples,
    refuse_shape_change,
    sample_shapes,
    split_pairs,
)
from tuner.worker.tfdata import is_batched, samples_before_batching
from tuner.workloads import resolve


def load_source(workload: Workload) -> Source:
    """Call the workload's ``data`` (or resolve its ``dataset`` function) and classify the form."""
    if workload.dataset:
        reference = workload.dataset
        return Source(FUNCTION, reference, function=resolve(reference))
    reference = str(workload.data)
    data = split_pairs(call_data(reference))
    if isinstance(data, tuple | list) and len(data) == 4:
        return _from_arrays(reference, data)
    if isinstance(data, tuple | list) and len(data) == 2 and all(map(_is_dataset, data)):
        return _from_datasets(reference, data[0], data[1])
    if isinstance(data, tuple | list) and len(data) == 2 and all(map(_is_pydataset, data)):
        return _from_pydatasets(reference, data[0], data[1])
    raise WorkloadError(
        f"{reference} must return (x_train, y_train, x_val, y_val) arrays or (train, val) "
        f"tf.data datasets or keras.utils.PyDatasets; it returned {describe(data)}"
    )


def _is_dataset(value: Any) -> bool:
    return isinstance(value, tf.data.Dataset)


def _is_pydataset(value: Any) -> bool:
    return isinstance(value, keras.utils.PyDataset)


def _from_pydatasets(reference: str, train: Any, val: Any) -> Source:
    """``PyDataset`` splits read batch by batch in their order (one reader, no ``workers``) as a
    ``tf.data`` stream, unbatched to be batched again at the trial's global batch."""
    train_size, val_size = pydataset_samples(train), pydataset_samples(val)
    if train_size == 0 or val_size == 0:
        raise WorkloadError(
            f"{reference}: the {'train' if train_size == 0 else 'val'} data are empty"
        )
    return Source(
        PYDATASETS,
        reference,
        train=_pydataset_stream(reference, train).unbatch(),
        val=_pydataset_stream(reference, val).unbatch(),
        train_size=train_size,
        val_size=val_size,
        train_infinite=train.num_batches is None,
        rebatched=True,
    )


def _pydataset_stream(reference: str, dataset: Any) -> Any:
    first = _batch_parts(dataset[0])
    if (problem := element_error(first)) is not None:
        raise WorkloadError(f"{reference}: a PyDataset's batch {problem}")
    signature = tf.nest.map_structure(_batch_spec, first)
    shapes = sample_shapes(first)
    if dataset.num_batches:  # the last batch, read for the size too: said here, not in tf.data
        last = dataset.num_batches - 1
        refuse_shape_change(reference, shapes, _batch_parts(dataset[last]), last)

    def one_pass() -> Iterator[Any]:
        for index, batch in enumerate(pydataset_pass(dataset)):
            parts = _batch_parts(batch)
            refuse_shape_change(reference, shapes, parts, index)
            yield parts

    return tf.data.Dataset.from_generator(one_pass, output_signature=signature)


def _batch_parts(batch: Any) -> Any:
    # The generator's elements must keep one structure: a lone x is (x,), as Keras unpacks it.
    return tuple(as_arrays(part) for part in element_parts(batch))


def _batch_spec(array: Any) -> Any:
    value = np.asarray(array)
    dtype = tf.string if value.dtype.kind in "OUS" else tf.as_dtype(value.dtype)
    return tf.TensorSpec((None, *value.shape[1:]), dtype)


def _from_arrays(reference: str, data: Any) -> Source:
    """Arrays, or structures of arrays as ``model.fit`` takes them, sliced into ``(x, y)``."""
    arrays = tuple(as_arrays(item) for item in data)
    train_size, val_size = check_arrays(reference, arrays)
    return Source(
        ARRAYS,
        reference,
        train=tf.data.Dataset.from_tensor_slices((arrays[0], arrays[1])),
        val=tf.data.Dataset.from_tensor_slices((arrays[2], arrays[3])),
        train_size=train_size,
        val_size=val_size,
        shuffle=True,
    )


def _from_datasets(reference: str, train: Any, val: Any) -> Source:
    for name, dataset in (("train", train), ("val", val)):
        _check_structure(reference, name, dataset)
    rebatched = is_batched(train)
    train_size, train_infinite = _size(train)
    val_size, _ = _size(val)
    if train_size == 0 or val_size == 0:
        empty = "train" if train_size == 0 else "val"
        raise WorkloadError(f"{reference}: the {empty} dataset is empty")
    if rebatched:
        # Sizes of a batched dataset count batches: the samples come from its batching step.
        train, train_size = train.unbatch(), samples_before_batching(train)
    if is_batched(val):
        val, val_size = val.unbatch(), samples_before_batching(val)
    return Source(
        DATASETS,
        reference,
        train=train,
        val=val,
        train_size=train_size,
        val_size=val_size,
        train_infinite=train_infinite,
        rebatched=rebatched,
    )


def _check_structure(reference: str, name: str, dataset: Any) -> None:
    """Elements must be ``x``, ``(x,)``, ``(x, y)`` or ``(x, y, sample_weight)``, as ``fit`` has."""
    if (problem := element_error(dataset.element_spec)) is not None:
        raise WorkloadError(f"{reference}: the {name} dataset's {problem}")


def _size(dataset: Any) -> tuple[int | None, bool]:
    """(number of elements or None, whether it is infinite), without reading the dataset."""
    cardinality = int(dataset.cardinality())  # INFINITE (-1) and UNKNOWN (-2) are negative
    return (cardinality if cardinality >= 0 else None), cardinality == -1


def train_batches(source: Source, global_batch: int, seed: int | None) -> Any:
    """The training stream, batched at ``global_batch`` (remainders dropped) and repeated. For form
    ``function`` see :func:`distributed_train`."""
    data = source.train
    if source.shuffle and source.train_size is not None:
        data = shuffled_passes(data, source.train_size, seed)
    elif not source.train_infinite:
        data = data.repeat()
    return data.batch(global_batch, drop_remainder=True).prefetch(tf.data.AUTOTUNE)


def shuffled_passes(data: Any, size: int, seed: int | None) -> Any:
    """The ``size`` elements of ``data``, pass after pass, each pass in an order that depends on
    ``seed`` and the pass's number alone (a stateless permutation).

    Not ``shuffle(reshuffle_each_iteration=True)``: its seeds come from a generator every
    iterator shares, and ``fit`` under ``MirroredStrategy`` opens two, so which seeds training
    gets is a thread race (measured: another first batch in 2 of 6 validate runs)."""
    if seed is None:  # no seed asked: a fresh order every pass, as Keras's own shuffle
        return data.shuffle(size, reshuffle_each_iteration=True).repeat()
    whole = data.batch(size).get_single_element()  # the arrays: one copy, gathered per pass
    key = tf.constant(seed, tf.int64)

    def one_pass(index: Any) -> Any:
        order = tf.random.experimental.stateless_shuffle(
            tf.range(size, dtype=tf.int64), seed=tf.stack([key, index])
        )
        taken = tf.nest.map_structure(lambda part: tf.gather(part, order), whole)
        return tf.data.Dataset.from_tensor_slices(taken)

    endless = tf.data.Dataset.counter().flat_map(one_pass)
    return endless.apply(tf.data.experimental.assert_cardinality(tf.data.INFINITE_CARDINALITY))


def train_stream(source: Source, strategy: Any, global_batch: int, seed: int | None) -> Any:
    """What a loop trains on: the batched stream, or for a dataset function the stream the
    strategy builds from it (already distributed)."""
    if source.form != FUNCTION:
        return train_batches(source, global_batch, seed)
    return distributed_train(source, strategy, global_batch, seed)


def noise_batches(source: Source, global_batch: int, seed: int) -> Any:
    """Batches for the noise scale, drawn apart from training; ``None`` for a dataset function."""
    if source.form == FUNCTION:
        return None
    data = source.train
    if source.form == ARRAYS and source.train_size is not None:
        data = data.shuffle(min(source.train_size, 16 * global_batch), seed=seed)
    if not source.train_infinite:
        data = data.repeat()
    return data.batch(global_batch, drop_remainder=True).prefetch(tf.data.AUTOTUNE)


def distributed_train(source: Source, strategy: Any, global_batch: int, seed: int | None) -> Any:
    """The training stream as the strategy distributes it, for every form."""
    if source.form != FUNCTION:
        return strategy.experimental_distribute_dataset(train_batches(source, global_batch, seed))

    def make(context: Any) -> Any:
        batch = context.get_per_replica_batch_size(global_batch)
        return split_from_function(source, "train", batch, context).repeat()

    return strategy.distribute_datasets_from_function(make)


def split_from_function(source: Source, split: str, batch: int, context: Any) -> Any:
    """Call the dataset function for one split; what it raises is the workload's error."""
    assert source.function is not None
    try:
        dataset = source.function(split, batch, context)
    except Exception as exc:
        raise WorkloadError(
            f"{source.reference}({split!r}, {batch}, ...) raised {error_line(exc)}"
        ) from exc
    if not _is_dataset(dataset):
        raise WorkloadError(
            f"{source.reference} must return a tf.data.Dataset for split {split!r}, "
            f"got {type(dataset).__name__}"
        )
    _check_structure(source.reference, split, dataset)
    return dataset


def val_batches(source: Source, global_batch: int, val_samples: int | None) -> Any:
    """The first ``val_samples`` samples, in order, batched at ``global_batch``, none dropped."""
    data = _samples(source, "val", global_batch)
    if val_samples is not None:
        data = data.take(val_samples)
    return data.batch(global_batch).prefetch(tf.data.AUTOTUNE)


def first_batch(source: Source, split: str, size: int) -> tuple[Any, ...]:
    """The first ``size`` samples of ``split`` as tensors, as the tuple Keras unpacks."""
    try:
        element = next(iter(_samples(source, split, size).batch(size).take(1)), None)
    except tf.errors.OpError as exc:
        line = error_line(exc)
        ours = line.partition(": ")[2]  # a refusal raised inside a PyDataset's generator
        if ours.startswith(f"{source.reference}: "):
            raise WorkloadError(ours) from exc
        raise WorkloadError(
            f"{source.reference}: reading the first {split} batch failed: {line}"
        ) from exc
    if element is None:
        raise WorkloadError(f"{source.reference}: the {split} dataset is empty")
    return element_parts(element)


def _samples(source: Source, split: str, batch: int) -> Any:
    """The samples of ``split``, unbatched (a dataset function called at ``batch``)."""
    if source.form == FUNCTION:
        return split_from_function(source, split, batch, None).unbatch()
    return source.train if split == "train" else source.val


def refuse_across_replicas(source: Source, replicas: int) -> None:
    """Ragged tensors, which Keras 3's ``fit`` under ``MirroredStrategy`` cannot take on several
    replicas, refused with what to do instead (strings train: :mod:`._symbolic`)."""
    if replicas < 2 or source.form == FUNCTION:
        return
    specs = tf.nest.flatten(source.train.element_spec)
    if any(isinstance(spec, tf.RaggedTensorSpec) for spec in specs):
        raise WorkloadError(
            f"{source.reference}: the data hold ragged tensors, and Keras's fit under "
            "MirroredStrategy cannot take them on several replicas; pad them in the data "
            "(ragged.to_tensor(), or padded_batch) and mask in the model"
        )
