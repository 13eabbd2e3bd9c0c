"""Inside the child: a model built on the data's first inputs before anything reads its weights.

A ``Sequential`` without ``keras.Input`` or a subclassed model has no weights until it first sees
data, so every build of a run is built the same way, on the same inputs, before ``set_weights``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from tuner.worker.sources import element_parts

SAMPLES = 2
"""How many training samples a model is built on: any count builds it; two are cheap to read."""


class FirstInputs:
    """The inputs of the first :data:`SAMPLES` training samples, read once for every build."""

    def __init__(self, read: Callable[[int], Any]) -> None:
        """``read(size)``: the first ``size`` samples, as the backend's ``first_batch`` gives."""
        self._read = read
        self._inputs: Any = None
        self.taken = False
        """Whether a model needed them (one was built on them)."""

    def __call__(self) -> Any:
        if not self.taken:
            self._inputs = element_parts(self._read(SAMPLES))[0]
            self.taken = True
        return self._inputs


def built(model: Any, inputs: Callable[[], Any] | None) -> Any:
    """``model``, built: called once on ``inputs()`` (in inference mode: no dropout drawn, no
    statistics updated) when it has no variables yet. ``inputs`` ``None``: left as it is."""
    if inputs is not None and not model.built:
        # No call(): its train_step calls its parts (keras-io's VAE), which are built.
        with contextlib.suppress(NotImplementedError):
            model(inputs(), training=False)
    return model
