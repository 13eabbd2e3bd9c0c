"""The spec fields that say how a trial runs: the Keras backend, the training loop, and the
precisions. What depends on the backend (the TensorFlow-only loops, the dataset function's input
context) is refused here, in one place, with one line each.
"""

from __future__ import annotations

from typing import Any

from tuner.core.errors import ConfigError
from tuner.core.options import BACKENDS
from tuner.core.spec import _fields as fields
from tuner.core.spec._fields import Table

DEFAULT_BACKEND = "tensorflow"
PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")
"""Values of ``search.precisions`` (``--precisions``): Keras dtype policies."""
DEFAULT_PRECISIONS = ("float32",)


def backend(workload: Table) -> str:
    """``workload.backend``: ``tensorflow`` (default) or ``jax``."""
    return fields.choice(
        workload.get("backend", DEFAULT_BACKEND), workload.label("backend"), BACKENDS
    )


def precision_list(value: Any, label: str) -> tuple[str, ...]:
    """A non-empty list of distinct known precisions, in the given order."""
    if not isinstance(value, list | tuple) or not value:
        raise ConfigError(
            f'{label} must be a non-empty list of precisions such as ["float32"], got {value!r}'
        )
    names = tuple(fields.choice(item, label, PRECISIONS) for item in value)
    if len(set(names)) != len(names):
        raise ConfigError(f"{label} lists a precision more than once; give each precision once")
    return names


def check_loop(search: Table, loop: str, update_on: str, precisions: tuple[str, ...]) -> None:
    """CPU-side updates exist for the custom loop only, mixed precisions for fit only."""
    if update_on == "cpu" and loop == "fit":
        raise ConfigError(
            f"{search.label('update_on')} = cpu needs loop = custom: Keras fit under "
            "CentralStorageStrategy does not match one device (see docs/guide/validate.md)"
        )
    if loop != "fit" and precisions != DEFAULT_PRECISIONS:
        raise ConfigError(
            f"{search.label('precisions')} other than float32 needs loop = fit: Keras's compile "
            "sets up the mixed-precision loss scaling that the custom loops do not"
        )


def check_backend(name: str, search: Table, workload: Table, loop: str, update_on: str) -> None:
    """Refuse what the JAX backend cannot run: the TensorFlow-only loops, and a dataset
    function (its ``input_context`` is ``tf.distribute``'s)."""
    if name != "jax":
        return
    where = workload.label("backend")
    if update_on == "cpu":
        raise ConfigError(
            f"{search.label('update_on')} = cpu runs on TensorFlow only; {where} is jax: "
            "drop update_on or use backend = tensorflow"
        )
    if loop != "fit":
        raise ConfigError(
            f"{search.label('loop')} = {loop} runs on TensorFlow only; {where} is jax: "
            "use loop = fit or backend = tensorflow"
        )
    if workload.get("dataset") is not None:
        raise ConfigError(
            f"{workload.label('dataset')} (a function of tf.distribute's input context) runs on "
            f"TensorFlow only; {where} is jax: give data = a function returning arrays, "
            "(train, val) iterables or keras.utils.PyDataset objects"
        )
