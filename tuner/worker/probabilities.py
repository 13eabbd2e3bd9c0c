"""Inside the child: the workload check's look at a probabilistic loss's inputs — the compiled
model's outputs on a sample batch — for the warning :mod:`tuner.core.logits` decides."""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any

import keras

from tuner.core.logits import PROBABILISTIC_LOSSES, logits_line, not_probabilities
from tuner.worker.compiled import loss_function


def probabilistic(loss: Any) -> str | None:
    """The Keras loss function ``loss`` computes when it is a crossentropy that expects
    probabilities (``from_logits`` false), by name, function or object; else ``None``."""
    function = loss_function(loss)
    name = function.__name__ if isinstance(function, types.FunctionType) else ""
    if name not in PROBABILISTIC_LOSSES:
        return None
    # A name is the function called with its defaults (probabilities); a Loss says its own.
    if isinstance(loss, keras.losses.Loss) and loss.get_config().get("from_logits", False):
        return None
    return name


def loss_warning(model: Any, loss: Any, x: Any, given: Any) -> str | None:
    """The line to say when ``model``'s outputs on ``x`` are not probabilities although its
    probabilistic ``loss`` expects them, or ``None``. ``given``: the spec's loss when the loss is
    the spec's (``None``: the build's). A model of several outputs, or one the check cannot call
    on ``x``, is not looked at."""
    function = probabilistic(loss)
    if function is None:
        return None
    try:
        outputs = model(x, training=False)
        if isinstance(outputs, list | tuple | Mapping):
            return None  # several outputs: which loss goes with which is the compile's
        reason = not_probabilities(function, keras.ops.convert_to_numpy(outputs))
    except Exception:  # a call only fit makes: no look, no warning
        return None
    if reason is None:
        return None
    shown = _shown(given if given is not None else loss)
    return logits_line(function, shown, reason, from_spec=given is not None)


def _shown(loss: Any) -> str:
    """The loss as its user wrote it: a name, a serialized loss's class, an object's class."""
    if isinstance(loss, str):
        return repr(loss)
    if isinstance(loss, Mapping):
        return repr(str(loss.get("class_name")))
    return type(loss).__name__ if not isinstance(loss, types.FunctionType) else loss.__name__
