"""The data of a validation run, in-process with real TensorFlow: tuner's shuffle is a function
of the seed and the pass alone, a user's unseeded shuffle follows the seed set before it is
built, and each run trains on its first batches read once and replayed, with their digests."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from tuner.worker import determinism  # noqa: E402
from tuner.worker.backends.tensorflow._inputs import shuffled_passes  # noqa: E402

X = np.arange(16, dtype=np.float32).reshape(8, 2)


def firsts(dataset: Any, count: int) -> list[float]:
    return [float(x[0]) for x, _ in dataset.take(count)]


def test_each_pass_is_a_function_of_the_seed_and_the_pass_alone() -> None:
    data = tf.data.Dataset.from_tensor_slices((X, X[:, :1]))
    stream = shuffled_passes(data, 8, seed=3)
    opened = iter(stream)  # another iterator, left open, as Keras's model build leaves one
    next(opened)
    passes = firsts(stream, 24)
    assert passes == firsts(shuffled_passes(data, 8, seed=3), 24)
    assert sorted(passes[:8]) == sorted(passes[8:16]) and passes[:8] != passes[8:16]
    assert passes[:8] != firsts(shuffled_passes(data, 8, seed=4), 8)


def test_an_unseeded_user_shuffle_follows_the_seed_set_before_it_is_built() -> None:
    def built() -> list[float]:
        determinism.seed_everything(7)
        return [float(v) for v in tf.data.Dataset.range(64).shuffle(64).take(16)]

    assert built() == built()


def test_the_first_batches_are_read_once_and_replayed_with_their_digests() -> None:
    rng = np.random.default_rng()  # an order no seed reaches: each read differs

    def pipeline() -> Any:
        order = rng.permutation(8)
        return tf.data.Dataset.from_tensor_slices((X[order], X[order, :1])).batch(2)

    replay, digests = determinism.fixed_batches(pipeline().repeat(), 3)
    seen = [x.numpy() for x, _ in replay.take(6)]
    assert all(np.array_equal(a, b) for a, b in zip(seen[:3], seen[3:], strict=True))
    assert digests == [determinism.batch_digest((x, x[:, :1])) for x in seen[:3]]
    assert len(set(digests)) == 3


def test_a_stream_of_numpy_batches_is_replayed_too() -> None:
    batches = ((np.full((2, 2), i, np.float32), np.zeros((2, 1))) for i in itertools.count())
    replay, digests = determinism.fixed_batches(batches, 2)
    assert [float(next(replay)[0][0, 0]) for _ in range(4)] == [0.0, 1.0, 0.0, 1.0]
    assert digests is not None and len(digests) == 2 and digests[0] != digests[1]


def test_a_distributed_stream_is_left_as_it_is() -> None:
    stream = object()  # a dataset function's stream: distributed, no batches to read back
    assert determinism.fixed_batches(stream, 3) == (stream, None)


def test_the_digest_reads_strings_by_their_contents() -> None:
    a = determinism.batch_digest((tf.constant([b"ab", b"c"]),))
    assert a == determinism.batch_digest((tf.constant([b"ab", b"c"]),))
    assert a != determinism.batch_digest((tf.constant([b"a", b"bc"]),))


def test_the_control_run_replays_each_batch_reversed_with_the_digests_as_read() -> None:
    data = tf.data.Dataset.from_tensor_slices((X, X[:, :1])).batch(4).repeat()
    plain, digests = determinism.fixed_batches(data, 2)
    reversed_, same = determinism.fixed_batches(data, 2, reorder=True)
    for (x, y), (rx, ry) in zip(plain.take(2), reversed_.take(2), strict=True):
        assert np.array_equal(rx.numpy(), x.numpy()[::-1])  # the examples and their labels
        assert np.array_equal(ry.numpy(), y.numpy()[::-1])  # reversed together
    assert same == digests  # the same batches, for the digest comparison
    numpy_batches = iter([(X[:4], X[:4, :1])])
    replay, _ = determinism.fixed_batches(numpy_batches, 1, reorder=True)
    assert np.array_equal(next(replay)[0], X[:4][::-1])
