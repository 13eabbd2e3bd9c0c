"""``tuner.search(loss=..., optimizer=...)`` takes what a spec takes — a Keras name or Keras's
serialized form — and an object of Keras's own classes, serialized as Keras serializes it
(issue 45, item 6); any other object is refused (compile it in the build)."""

from __future__ import annotations

import keras
import pytest

from tuner.api._search import keras_object
from tuner.core.errors import ConfigError

FROM_LOGITS = {"class_name": "SparseCategoricalCrossentropy", "config": {"from_logits": True}}


def test_a_name_and_the_serialized_form_are_taken_as_given() -> None:
    assert keras_object("loss", "mse") == "mse"
    assert keras_object("loss", FROM_LOGITS) == FROM_LOGITS


def test_a_keras_object_is_serialized_and_deserializes_to_its_settings() -> None:
    loss = keras_object("loss", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    assert isinstance(loss, dict) and loss["class_name"] == "SparseCategoricalCrossentropy"
    assert keras.losses.deserialize(loss).get_config()["from_logits"] is True
    optimizer = keras_object("optimizer", keras.optimizers.SGD(momentum=0.9))
    assert isinstance(optimizer, dict) and optimizer["config"]["momentum"] == 0.9
    assert keras_object("loss", keras.losses.huber) == "huber"


def test_another_object_is_refused_in_one_line() -> None:
    class Custom:
        pass

    with pytest.raises(ConfigError, match=r"^loss= takes a Keras name such as 'mse'; .* Custom"):
        keras_object("loss", Custom())
