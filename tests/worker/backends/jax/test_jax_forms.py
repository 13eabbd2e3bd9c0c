"""Data forms under Keras on JAX (issue 28): dicts of arrays and ``x``-alone batches are read as
``model.fit`` takes them; what JAX has no form for (strings, Python objects) is refused up front
with one line."""

from __future__ import annotations

import sys
import types
from typing import Any

import numpy as np
import pytest
from child_requests import workload

from tuner.core.errors import WorkloadError
from tuner.worker.backends.jax import _inputs as jax_inputs


def load(monkeypatch: pytest.MonkeyPatch, data: Any) -> Any:
    module = types.ModuleType("jax_forms_data")
    module.data = lambda: data  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "jax_forms_data", module)
    return jax_inputs.load_source(workload(data="jax_forms_data:data", backend="jax"))


def test_dicts_of_arrays_keep_their_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    x = {"title": np.ones((6, 8)), "body": np.zeros((6, 16))}
    source = load(monkeypatch, (x, {"priority": np.ones((6, 1))}, x, {"priority": np.ones(6)}))
    assert (source.train_size, source.val_size) == (6, 6)
    features, targets = jax_inputs.first_batch(source, "train", 4)
    assert features["title"].shape == (4, 8) and targets["priority"].shape == (4, 1)


def test_a_dict_whose_arrays_differ_in_length_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    x = {"title": np.ones((6, 8)), "body": np.zeros((5, 16))}
    with pytest.raises(WorkloadError, match=r"the arrays of x_train have different numbers"):
        load(monkeypatch, (x, np.ones(6), x, np.ones(6)))


def test_strings_are_refused_up_front_with_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    text = np.array(["a good film", "a bad plot"] * 3)
    with pytest.raises(WorkloadError) as raised:
        load(monkeypatch, (text, np.ones(6), text, np.ones(6)))
    message = str(raised.value)
    assert "x_train holds strings or Python objects" in message
    assert "use backend = tensorflow" in message and "\n" not in message


def test_batches_of_x_alone_are_read_and_four_tuples_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    alone = [np.ones((4, 3)) for _ in range(3)]
    source = load(monkeypatch, (alone, alone))
    (x,) = jax_inputs.first_batch(source, "train", 6)
    assert x.shape == (6, 3)
    four = [(np.ones((4, 3)),) * 4 for _ in range(2)]
    with pytest.raises(WorkloadError, match=r"must be x, \(x, y\) or \(x, y, sample_weight\)"):
        jax_inputs.first_batch(load(monkeypatch, (four, four)), "train", 4)


def test_batches_of_several_sample_shapes_are_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches padded each to their own length (dicts of inputs: the input is named by its
    key): refused when read, with what to do, not NumPy's concatenation error."""

    def batch(length: int) -> tuple[Any, ...]:
        return ({"ids": np.ones((4, length), np.int64)}, np.zeros((4, 1), np.float32))

    source = load(monkeypatch, ([batch(3), batch(3), batch(5)], [batch(3)]))
    with pytest.raises(
        WorkloadError,
        match=r"the samples of x\['ids'\] are \(3,\) in the "
        r"first batch and \(5,\) in batch 2; .* pad to one fixed length",
    ):
        jax_inputs.first_batch(source, "train", 12)
