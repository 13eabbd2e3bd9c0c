"""The input layer with real tf.data pipelines (in this process, no strategy): forms, batching,
sizes, and the first-batch checks."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from child_requests import workload

tf = pytest.importorskip("tensorflow")

from tuner.core.errors import WorkloadError  # noqa: E402
from tuner.worker.backends.tensorflow import _inputs as inputs  # noqa: E402
from tuner.worker.tfdata import is_batched, samples_before_batching  # noqa: E402

X = np.arange(40, dtype="float32").reshape(20, 2)
Y = X.sum(axis=1, keepdims=True)


@pytest.fixture
def workload_module() -> Iterator[types.ModuleType]:
    """A throwaway module whose functions the tests set; importable as ``tuner_inputs_case``."""
    module = types.ModuleType("tuner_inputs_case")
    sys.modules[module.__name__] = module
    yield module
    del sys.modules[module.__name__]


def load(module: types.ModuleType, data: Any) -> inputs.Source:
    module.data = lambda: data  # type: ignore[attr-defined]
    return inputs.load_source(workload(data="tuner_inputs_case:data"))


def test_arrays_are_shuffled_batched_at_the_global_batch(workload_module: Any) -> None:
    source = load(workload_module, (X, Y, X[:6], Y[:6]))
    assert (source.form, source.train_size, source.val_size) == ("arrays", 20, 6)
    batches = list(inputs.train_batches(source, 8, seed=1).take(5))
    assert all(x.shape == (8, 2) for x, _ in batches)  # repeated, remainder dropped
    seen = np.concatenate([x.numpy() for x, _ in batches[:2]])
    assert not np.array_equal(seen, X[:16])  # shuffled with the seed


def test_a_batched_dataset_is_rebatched_at_the_global_batch(workload_module: Any) -> None:
    train = tf.data.Dataset.from_tensor_slices((X, Y)).batch(3).map(lambda x, y: (x * 2, y))
    val = tf.data.Dataset.from_tensor_slices((X[:5], Y[:5])).batch(2)
    source = load(workload_module, (train, val))
    assert source.form == "datasets" and source.rebatched
    assert (source.train_size, source.val_size) == (20, 5)  # samples, from the batching steps
    x, _ = next(iter(inputs.train_batches(source, 8, seed=None)))
    np.testing.assert_array_equal(x.numpy(), X[:8] * 2)  # the user's order and map kept
    val_x = [x.numpy() for x, _ in inputs.val_batches(source, 4, val_samples=None)]
    assert [len(v) for v in val_x] == [4, 1]  # in full, remainder kept


def test_an_unbatched_infinite_stream_is_taken_as_it_comes(workload_module: Any) -> None:
    train = tf.data.Dataset.range(10**9).map(lambda i: (tf.fill([2], tf.cast(i, "float32")), i))
    train = train.repeat()
    val = tf.data.Dataset.range(100).map(lambda i: (tf.fill([2], tf.cast(i, "float32")), i))
    source = load(workload_module, (train, val))
    assert source.train_infinite and source.train_size is None and not source.rebatched
    _, y = next(iter(inputs.train_batches(source, 4, seed=None)))
    assert y.numpy().tolist() == [0, 1, 2, 3]
    fixed = [y.numpy().tolist() for _, y in inputs.val_batches(source, 8, val_samples=10)]
    assert fixed == [list(range(8)), [8, 9]]  # the same first 10, in order, every time


def test_is_batched_sees_through_maps_and_unbatch() -> None:
    base = tf.data.Dataset.from_tensor_slices((X, Y))
    assert not is_batched(base.map(lambda x, y: (x, y)))
    assert is_batched(base.batch(4).prefetch(1))
    assert not is_batched(base.batch(4).unbatch())


@pytest.mark.parametrize(
    ("pipeline", "samples"),
    [
        (lambda d: d.shuffle(1024).batch(6), 20),  # the built-in-methods guide's way
        (lambda d: d.batch(6).map(lambda x, y: (x, y)).prefetch(2), 20),  # text classification's
        (lambda d: d.batch(6, drop_remainder=True), 18),
        (lambda d: d.padded_batch(6).cache().shuffle(3), 20),
        (lambda d: d.batch(6).filter(lambda x, y: True), None),  # batches of unknown count
        (lambda d: d.batch(6).repeat(2), None),  # not one element per batch any more
        (lambda d: d.batch(6).unbatch().batch(7), None),
    ],
)
def test_a_batched_datasets_samples_are_read_from_its_batching_step(pipeline, samples) -> None:
    assert samples_before_batching(pipeline(tf.data.Dataset.from_tensor_slices((X, Y)))) == samples


def test_image_folder_as_the_user_reads_it(tmp_path: Path, workload_module: Any) -> None:
    for label in ("cat", "dog"):
        folder = tmp_path / label
        folder.mkdir()
        for i in range(5):
            pixels = np.full((8, 8, 3), 40 * i, dtype="uint8")
            tf.io.write_file(str(folder / f"{i}.png"), tf.io.encode_png(pixels))
    train = tf.keras.utils.image_dataset_from_directory(
        tmp_path, image_size=(8, 8), batch_size=4, seed=0, verbose=False
    )
    source = load(workload_module, (train, train))
    assert source.rebatched and source.train_size == 10  # Keras's loader batches file paths
    x, y = next(iter(inputs.train_batches(source, 6, seed=None)))
    assert x.shape == (6, 8, 8, 3) and y.shape == (6,)


def test_a_dataset_function_is_called_per_split(workload_module: Any) -> None:
    calls: list[tuple[str, int, Any]] = []

    def dataset(split: str, batch_size: int, context: Any) -> Any:
        calls.append((split, batch_size, context))
        return tf.data.Dataset.from_tensor_slices((X, Y)).batch(batch_size)

    workload_module.dataset = dataset  # type: ignore[attr-defined]
    source = inputs.load_source(workload(data=None, dataset="tuner_inputs_case:dataset"))
    assert source.form == "function"
    sizes = [len(x) for x, _ in inputs.val_batches(source, 8, val_samples=12)]
    assert sizes == [8, 4] and calls == [("val", 8, None)]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ((X, Y), "must return (x_train, y_train, x_val, y_val) arrays or (train, val)"),
        ("oops", "it returned a str"),
        ((X, Y, X[:0], Y[:0]), "x_val is empty"),
        ((X, Y[:3], X, Y), "different numbers of samples"),
    ],
)
def test_bad_forms_name_the_problem(workload_module: Any, data: Any, message: str) -> None:
    with pytest.raises(WorkloadError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load(workload_module, data)


def test_elements_that_are_not_what_fit_takes(workload_module: Any) -> None:
    lonely = tf.data.Dataset.from_tensor_slices(X)
    assert load(workload_module, (lonely, lonely)).train_size == len(X)  # x alone: fit takes it
    four = tf.data.Dataset.from_tensor_slices((X, Y, Y, Y))
    with pytest.raises(WorkloadError, match=r"must be x, \(x, y\) or \(x, y, sample_weight\)"):
        load(workload_module, (four, four))


def test_an_empty_dataset(workload_module: Any) -> None:
    empty = tf.data.Dataset.from_tensor_slices((X[:0], Y[:0]))
    with pytest.raises(WorkloadError, match="train dataset is empty"):
        load(workload_module, (empty, empty))


def test_a_failing_read_keeps_tensorflows_message(workload_module: Any) -> None:
    def explode(x: Any, y: Any) -> Any:
        with tf.control_dependencies([tf.debugging.assert_less(x, -1.0, "pixels out of range")]):
            return tf.identity(x), y

    bad = tf.data.Dataset.from_tensor_slices((X, Y)).map(explode)
    source = load(workload_module, (bad, bad))
    with pytest.raises(WorkloadError, match="pixels out of range"):
        inputs.first_batch(source, "train", 4)


class Batches(tf.keras.utils.PyDataset):
    """A PyDataset as its docs write one: batches sliced in ``__getitem__``, the last smaller."""

    def __init__(self, x: Any, y: Any | None, batch_size: int) -> None:
        super().__init__()
        self.x, self.y, self.batch_size = x, y, batch_size
        self.epochs_ended = 0

    def __len__(self) -> int:
        return -(-len(self.x) // self.batch_size)

    def __getitem__(self, index: int) -> Any:
        part = slice(index * self.batch_size, (index + 1) * self.batch_size)
        return self.x[part] if self.y is None else (self.x[part], self.y[part])

    def on_epoch_end(self) -> None:
        self.epochs_ended += 1


def test_pydatasets_are_read_in_their_order_and_rebatched(workload_module: Any) -> None:
    train, val = Batches(X, Y, batch_size=6), Batches(X[:5], Y[:5], batch_size=2)
    source = load(workload_module, (train, val))
    assert (source.form, source.train_size, source.val_size) == ("pydatasets", 20, 5)
    assert source.rebatched and not source.train_infinite
    batches = list(inputs.train_batches(source, 8, seed=None).take(5))  # two passes
    seen = np.concatenate([x.numpy() for x, _ in batches])
    np.testing.assert_array_equal(seen, np.concatenate([X, X]))  # the PyDataset's own order
    assert train.epochs_ended >= 1  # told at the end of each pass, as Keras tells it
    assert [len(x) for x, _ in inputs.val_batches(source, 4, val_samples=None)] == [4, 1]


class PaddedPerBatch(Batches):
    """Token ids padded to each batch's own longest row (a text pipeline's habit): 3 or 5
    columns, as ``lengths`` says per batch."""

    def __init__(self, lengths: list[int]) -> None:
        super().__init__(np.zeros((6 * len(lengths), 1)), None, 6)
        self.lengths = lengths

    def __getitem__(self, index: int) -> Any:
        return np.ones((6, self.lengths[index]), np.int64), np.zeros((6, 1), np.float32)


@pytest.mark.parametrize("lengths", [[3, 3, 5], [3, 5, 3]], ids=["last", "middle"])
def test_pydataset_batches_of_several_sample_shapes_are_one_line(
    workload_module: Any, lengths: list[int]
) -> None:
    """Plain fit trains them; tuner re-batches samples, so it says which input changed where
    (the last batch when the size is read, a middle one from inside tf.data) and what to do."""
    val = PaddedPerBatch([3])
    with pytest.raises(WorkloadError) as raised:
        source = load(workload_module, (PaddedPerBatch(lengths), val))
        inputs.first_batch(source, "train", 18)
    assert str(raised.value) == (
        "tuner_inputs_case:data: the samples of x are (3,) in the first batch and (5,) in "
        f"batch {lengths.index(5)}; tuner re-batches samples at each global batch size, so "
        "every sample needs one shape: pad to one fixed length in the data"
    )


def test_a_pydataset_of_inputs_alone_is_one_structure(workload_module: Any) -> None:
    source = load(workload_module, (Batches(X, None, 6), Batches(X[:4], None, 6)))
    (x,) = next(iter(inputs.train_batches(source, 4, seed=None)))
    np.testing.assert_array_equal(x.numpy(), X[:4])
