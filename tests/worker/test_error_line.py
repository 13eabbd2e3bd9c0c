"""The one line an error shows (issue 28): its name once, Keras's own message from a layer's call
rather than the last line of its argument list."""

from __future__ import annotations

import numpy as np
import pytest

from tuner.core.errors import error_line


def test_a_layer_call_error_shows_keras_own_line() -> None:
    import keras

    model = keras.Sequential([keras.Input((10,)), keras.layers.Dense(1)])
    model.compile("adam", "mse")
    with pytest.raises(ValueError) as raised:
        model.train_on_batch(np.zeros((8, 20), np.float32), np.zeros((8, 1), np.float32))
    line = error_line(raised.value)
    assert line.startswith("ValueError: Input 0 ")
    assert "expected axis -1 of input shape to have value 10" in line
    assert "(8, 20)" in line and "kwargs" not in line and "\n" not in line and "\x1b" not in line


def test_a_name_inside_the_message_shows_once() -> None:
    traced = ValueError("in user code:\n\n    File 'm.py', line 3\n\n    ValueError: bad labels")
    assert error_line(traced) == "ValueError: bad labels"
    nested = RuntimeError("tensorflow.python.framework.errors_impl.InvalidArgumentError: x < 0")
    assert error_line(nested) == "RuntimeError: x < 0"


def test_out_of_memory_lines_win_and_a_bare_error_is_its_name() -> None:
    text = "Graph execution error:\n\nOOM when allocating tensor with shape[4096,8192]\n[[node]]"
    assert error_line(MemoryError(text)) == (
        "MemoryError: OOM when allocating tensor with shape[4096,8192]"
    )
    assert error_line(KeyError()) == "KeyError"
    assert len(error_line(ValueError("x" * 1000), limit=50)) == len("ValueError: ") + 50
