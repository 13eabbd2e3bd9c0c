"""A failure the configuration does not cause stops the search (issue 28): the same error at two
grid points, once the batch sizes a message names are taken out. The whole rule, through a real
search on two replicas, is tests/e2e/test_keras_forms.py."""

from __future__ import annotations

from tuner.driver.trial.objective import without_batch_sizes

ATTRS = {"global_batch_size": 128, "per_replica_batch_size": 64}


def test_the_batch_sizes_a_message_names_are_taken_out() -> None:
    message = "expected axis -1 to have value 10, but received input with shape (64, 20)"
    assert without_batch_sizes(message, ATTRS) == message.replace("64", "<batch>")
    other = {"global_batch_size": 256, "per_replica_batch_size": 128}
    assert without_batch_sizes(message.replace("64", "128"), other) == without_batch_sizes(
        message, ATTRS
    )


def test_other_numbers_stay() -> None:
    message = "a value 1280 and 12.8 and 128x are not the batch"
    assert without_batch_sizes(message, ATTRS) == message
