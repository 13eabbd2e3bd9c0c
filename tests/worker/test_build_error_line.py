"""A build_model that raises is one line (issue 28, part 4): the reference, then the error as
:func:`tuner.core.errors.error_line` writes it — its name once, Keras's own message from a
layer's call, without the call frame and argument list Keras wraps around it."""

from __future__ import annotations

from typing import Any

import pytest

from tuner.core.errors import WorkloadError
from tuner.worker import hypermodel


def reshape_that_cannot_fit() -> Any:
    """Four features reshaped to three: Keras refuses it inside ``Reshape.call``."""
    import keras

    inputs = keras.Input((10,))
    features = keras.layers.Dense(4)(inputs)
    return keras.Model(inputs, keras.layers.Reshape((3,))(features))


def test_a_build_that_raises_in_a_layer_call_is_keras_own_line() -> None:
    reference = f"{__name__}:reshape_that_cannot_fit"
    with pytest.raises(WorkloadError) as raised:
        hypermodel.build(reference)
    assert str(raised.value) == (
        f"{reference} raised ValueError: The total size of the tensor must be unchanged. "
        "Received: input_shape=(4,), target_shape=(3,)"
    )
