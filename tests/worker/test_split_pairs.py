"""keras.datasets' form of data, ``((x_train, y_train), (x_val, y_val))``, is tuner's four arrays;
look-alikes of other forms are left to them."""

from __future__ import annotations

import numpy as np

from tuner.worker.sources import split_pairs

X, Y = np.zeros((8, 3), "float32"), np.zeros(8, "int64")


def test_keras_datasets_form_becomes_four_arrays() -> None:
    data = ((X, Y), (X[:4], Y[:4]))
    parts = split_pairs(data)
    assert len(parts) == 4 and [p.shape[0] for p in parts] == [8, 8, 4, 4]


def test_dicts_of_arrays_are_arrays_too() -> None:
    inputs = {"title": X, "body": X}
    assert len(split_pairs(((inputs, Y), (inputs, Y)))) == 4


def test_other_forms_are_left_as_they_are() -> None:
    four = (X, Y, X, Y)
    assert split_pairs(four) is four
    batches = ([(X, Y), (X, Y)], [(X, Y), (X, Y)])  # JAX's iterables of two (x, y) batches
    assert split_pairs(batches) is batches
    batch_pairs = (((X, Y), (X, Y)), ((X, Y), (X, Y)))  # pairs of batches, not arrays
    assert split_pairs(batch_pairs) is batch_pairs
    streams = (iter([(X, Y)]), iter([(X, Y)]))
    assert split_pairs(streams) is streams
