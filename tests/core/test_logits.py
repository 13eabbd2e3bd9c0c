"""The decision behind the workload check's warning (issue 45, item 6): a crossentropy that
expects probabilities, given outputs that are not — a last ``Dense`` without softmax (logits)."""

from __future__ import annotations

import numpy as np
import pytest

from tuner.core.logits import logits_line, not_probabilities

SOFTMAX = np.array([[0.1, 0.2, 0.7], [0.3, 0.3, 0.4]])
LOGITS = np.array([[-1.2, 0.3, 2.5], [0.1, -0.4, 0.9]])


@pytest.mark.parametrize(
    "function", ["sparse_categorical_crossentropy", "categorical_crossentropy"]
)
def test_class_probabilities_pass_and_logits_do_not(function: str) -> None:
    assert not_probabilities(function, SOFTMAX) is None
    assert not_probabilities(function, SOFTMAX.astype(np.float32)) is None  # rounding
    assert not_probabilities(function, LOGITS) == "values from -1.2 to 2.5, outside [0, 1]"


def test_rows_in_range_that_do_not_sum_to_one_are_not_class_probabilities() -> None:
    sigmoids = np.array([[0.9, 0.8, 0.7], [0.1, 0.2, 0.1]])
    said = not_probabilities("categorical_crossentropy", sigmoids)
    assert said == "rows summing to 0.4 to 2.4, not 1"
    # ...which is what a binary crossentropy takes: one probability per output
    assert not_probabilities("binary_crossentropy", sigmoids) is None


def test_binary_logits_are_out_of_range() -> None:
    assert not_probabilities("binary_crossentropy", np.array([[0.5], [-0.3]])) is not None
    assert not_probabilities("binary_crossentropy", np.array([[0.5], [0.3]])) is None
    # one column has no row to sum: a sparse crossentropy on it is not judged by its sum
    assert not_probabilities("sparse_categorical_crossentropy", np.array([[0.5], [0.3]])) is None


@pytest.mark.parametrize("outputs", [np.zeros((0, 3)), np.array([[np.nan, 2.0, 3.0]])])
def test_nothing_is_said_of_empty_or_non_finite_outputs(outputs: np.ndarray) -> None:
    assert not_probabilities("categorical_crossentropy", outputs) is None


def test_the_line_names_the_loss_and_the_fix_where_it_was_given() -> None:
    reason = "values from -1.2 to 2.5, outside [0, 1]"
    spec = logits_line("sparse_categorical_crossentropy", "'sparse_categorical_crossentropy'",
                       reason, from_spec=True)  # fmt: skip
    assert spec == (
        "the loss 'sparse_categorical_crossentropy' expects probabilities, but the model's "
        "outputs on a sample batch are not (values from -1.2 to 2.5, outside [0, 1]): if its "
        "last layer gives logits, say from_logits = true: [workload] loss = {class_name = "
        '"SparseCategoricalCrossentropy", config = {from_logits = true}}'
    )
    build = logits_line("binary_crossentropy", "BinaryCrossentropy", reason, from_spec=False)
    assert build.endswith("compile with keras.losses.BinaryCrossentropy(from_logits=True)")
    assert "\n" not in spec + build
