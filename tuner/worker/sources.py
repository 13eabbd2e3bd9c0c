"""Inside the child: what a workload's data are, before either backend batches them.

Backend-neutral (no framework import): the input forms, the
:class:`Source` both input layers (:mod:`tuner.worker.backends.tensorflow._inputs` for TensorFlow,
:mod:`tuner.worker.backends.jax._inputs` for JAX) return, and calling the workload's ``data``
function.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tuner.core.errors import WorkloadError
from tuner.workloads import resolve

ARRAYS, DATASETS, FUNCTION = "arrays", "datasets", "function"

PYDATASETS, ITERABLES = "pydatasets", "iterables"
"""Under JAX only: ``(train, val)`` Keras ``PyDataset``\\ s, or re-iterable Python iterables of
``(x, y)`` batches."""


@dataclass(frozen=True)
class Source:
    """What a workload provides, before tuner batches it.

    ``train``/``val`` are what the backend's input layer reads (unbatched ``tf.data`` datasets
    under TensorFlow; arrays or re-iterable batch streams under JAX); ``function`` is the dataset
    function (form ``function``, TensorFlow only). Sizes are ``None`` when infinite or unknown.
    """

    form: str
    reference: str
    train: Any = None
    val: Any = None
    train_size: int | None = None
    val_size: int | None = None
    train_infinite: bool = False
    rebatched: bool = False
    shuffle: bool = False
    function: Callable[..., Any] | None = None


def call_data(reference: str) -> Any:
    """Call the workload's ``data`` function; what it raises is the workload's error."""
    function = resolve(reference)
    try:
        return function()
    except Exception as exc:
        raise WorkloadError(f"{reference} raised {type(exc).__name__}: {exc}") from exc


def describe(value: Any) -> str:
    """A short description of what a ``data`` function returned, for refusals."""
    if isinstance(value, tuple | list):
        inner = ", ".join(type(item).__name__ for item in value[:5])
        return f"a {type(value).__name__} of {len(value)} ({inner})"
    return f"a {type(value).__name__}"


def check_arrays(reference: str, arrays: tuple[Any, ...]) -> None:
    """Refuse empty arrays and x/y of different lengths (``(x_train, y_train, x_val, y_val)``)."""
    names = ("x_train", "y_train", "x_val", "y_val")
    for name, array in zip(names, arrays, strict=True):
        if array.ndim == 0 or array.shape[0] == 0:
            raise WorkloadError(f"{reference}: {name} is empty")
    if arrays[0].shape[0] != arrays[1].shape[0] or arrays[2].shape[0] != arrays[3].shape[0]:
        raise WorkloadError(f"{reference}: x and y have different numbers of samples")
