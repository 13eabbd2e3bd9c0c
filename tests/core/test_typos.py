"""``tuner.core.typos``: the "did you mean" of every misspelt name counts a transposition of
two neighbouring letters as one edit (issue 46: ``adma`` suggested ``adamax``)."""

from __future__ import annotations

import pytest

from tuner.core.keras_names import OPTIMIZERS, nearest
from tuner.core.typos import closest, edit_distance


@pytest.mark.parametrize(
    ("first", "second", "edits"),
    [
        ("adma", "adam", 1),  # a transposition
        ("adma", "adamax", 2),
        ("", "abc", 3),
        ("kitten", "sitting", 3),
        ("ca", "abc", 3),  # optimal string alignment: no substring edited twice
        ("same", "same", 0),
    ],
)
def test_the_edit_distance_counts_a_transposition_once(first: str, second: str, edits: int) -> None:
    assert edit_distance(first, second) == edits == edit_distance(second, first)


def test_a_transposed_optimizer_name_suggests_the_one_meant() -> None:
    assert nearest("adma", OPTIMIZERS) == "adam"
    assert nearest("rmpsrop", OPTIMIZERS) == "rmsprop"
    assert closest("adma", ["adamax", "adam"]) == "adam"  # whatever the order given


def test_nothing_alike_is_no_suggestion_and_ties_keep_the_first() -> None:
    assert closest("zzzz", ["adam", "sgd"]) is None
    assert closest("abc", ["abd", "abe"]) == "abd"
    assert closest("batch_multiplier", ["batch_multipliers", "base_batch_size"]) == (
        "batch_multipliers"
    )
