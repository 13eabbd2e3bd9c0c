"""Inside the child: what a workload's data are, before either backend batches them."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from tuner.core.errors import WorkloadError, error_line
from tuner.workloads import resolve

ARRAYS, DATASETS, FUNCTION = "arrays", "datasets", "function"

PYDATASETS, ITERABLES = "pydatasets", "iterables"
"""Under JAX only: ``(train, val)`` ``PyDataset``\\ s or re-iterables of ``(x, y)`` batches."""


@dataclass(frozen=True)
class Source:
    """What a workload provides, before tuner batches it (sizes ``None`` when unknown)."""

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
        raise WorkloadError(f"{reference} raised {error_line(exc)}") from exc


def describe(value: Any) -> str:
    """A short description of what a ``data`` function returned, for refusals."""
    if isinstance(value, tuple | list):
        inner = ", ".join(type(item).__name__ for item in value[:5])
        return f"a {type(value).__name__} of {len(value)} ({inner})"
    return f"a {type(value).__name__}"


ARRAY_NAMES = ("x_train", "y_train", "x_val", "y_val")


def map_leaves(function: Callable[[Any], Any], structure: Any) -> Any:
    """``function`` over every leaf of a nested structure; the structure kept, ``None`` too."""
    if structure is None:
        return None
    if isinstance(structure, Mapping):
        return {key: map_leaves(function, value) for key, value in structure.items()}
    if isinstance(structure, tuple | list):
        return type(structure)(map_leaves(function, value) for value in structure)
    return function(structure)


def leaves(structure: Any) -> list[Any]:
    """The leaves of a nested structure, in order."""
    found: list[Any] = []
    map_leaves(found.append, structure)
    return found


def split_pairs(data: Any) -> Any:
    """``((x_train, y_train), (x_val, y_val))`` (``load_data()``'s form) as four arrays."""
    pairs = isinstance(data, tuple | list) and len(data) == 2
    if not pairs or not all(isinstance(p, tuple) and len(p) == 2 for p in data):
        return data
    parts = [*data[0], *data[1]]
    if all(_is_array(part) or _is_dict_of_arrays(part) for part in parts):
        return tuple(parts)
    return data


def _is_dict_of_arrays(value: Any) -> bool:
    return isinstance(value, Mapping) and bool(value) and all(map(_is_array, value.values()))


def _is_array(value: Any) -> bool:
    """An array ``model.fit`` takes as one input (a shape and ``__array__``), not a dataset."""
    return hasattr(value, "__array__") and hasattr(value, "shape")


def as_arrays(part: Any) -> Any:
    """One part of the four arrays as ``model.fit`` takes it, leaves NumPy arrays, lists as
    tuples (``tf.data`` would stack a list into one tensor; Keras reads a tuple as inputs)."""
    if isinstance(part, Mapping):
        return {key: as_arrays(value) for key, value in part.items()}
    if isinstance(part, tuple | list):
        return tuple(as_arrays(value) for value in part)
    return None if part is None else np.asarray(part)


def check_arrays(reference: str, arrays: tuple[Any, ...]) -> tuple[int, int]:
    """Refuse empty arrays and x/y of different lengths (``(x_train, y_train, x_val, y_val)``,
    each an array or a structure of arrays); the (training, validation) sizes."""
    sizes = []
    for name, part in zip(ARRAY_NAMES, arrays, strict=True):
        found = leaves(part)
        if not found or any(np.ndim(a) == 0 or np.shape(a)[0] == 0 for a in found):
            raise WorkloadError(f"{reference}: {name} is empty")
        lengths = {int(np.shape(a)[0]) for a in found}
        if len(lengths) > 1:
            raise WorkloadError(
                f"{reference}: the arrays of {name} have different numbers of samples "
                f"({', '.join(map(str, sorted(lengths)))})"
            )
        sizes.append(lengths.pop())
    if sizes[0] != sizes[1] or sizes[2] != sizes[3]:
        raise WorkloadError(f"{reference}: x and y have different numbers of samples")
    return sizes[0], sizes[2]


def element_parts(element: Any) -> tuple[Any, ...]:
    """A batch or element as the tuple Keras unpacks (``keras.utils.unpack_x_y_sample_weight``):
    ``(x, y, sample_weight)``, ``(x, y)`` or ``(x,)``; a lone dict or tensor is ``(x,)``."""
    if isinstance(element, list):
        element = tuple(element)
    return element if isinstance(element, tuple) else (element,)


def element_error(element: Any) -> str | None:
    """Why ``element`` is not a structure ``model.fit`` takes, or ``None``."""
    if isinstance(element, tuple | list) and not 1 <= len(element) <= 3:
        return (
            f"elements must be x, (x, y) or (x, y, sample_weight) as model.fit takes them; "
            f"they are tuples of {len(element)}"
        )
    return None


PART_NAMES = ("x", "y", "sample_weight")


def sample_shapes(parts: tuple[Any, ...]) -> dict[str, tuple[int, ...]]:
    """The shape of one sample (the batch axis dropped) of every leaf of a batch's parts, by
    the leaf's name as a user writes it (``x``, ``x['title']``, ``y[1]``)."""
    shapes: dict[str, tuple[int, ...]] = {}

    def walk(name: str, value: Any) -> None:
        if isinstance(value, Mapping):
            for key, item in value.items():
                walk(f"{name}[{key!r}]", item)
        elif isinstance(value, tuple | list):
            for position, item in enumerate(value):
                walk(f"{name}[{position}]", item)
        elif value is not None:
            shapes[name] = tuple(np.shape(value)[1:])

    for name, part in zip(PART_NAMES, parts, strict=False):
        walk(name, part)
    return shapes


def refuse_shape_change(
    reference: str, first: dict[str, tuple[int, ...]], parts: tuple[Any, ...], index: int
) -> None:
    """Refuse batch ``index`` when its samples' shapes are not the first batch's (tuner
    re-batches at every global batch, and samples of several shapes do not stack)."""
    for name, now in sample_shapes(parts).items():
        was = first.get(name, now)
        if was != now:
            raise WorkloadError(
                f"{reference}: the samples of {name} are {was} in the first batch and {now} in "
                f"batch {index}; tuner re-batches samples at each global batch size, so every "
                "sample needs one shape: pad to one fixed length in the data"
            )


def pydataset_pass(dataset: Any) -> Iterator[Any]:
    """One pass over a ``PyDataset`` by index, then ``on_epoch_end()``, as Keras does it."""
    count = dataset.num_batches
    for index in range(count) if count is not None else itertools.count():
        yield dataset[index]
    dataset.on_epoch_end()


def pydataset_samples(dataset: Any) -> int | None:
    """Samples in a ``keras.utils.PyDataset`` of known length: all its batches but the last at
    the first one's size, plus the last (two batches read; ``None`` for an infinite one)."""
    count = dataset.num_batches
    if count is None:
        return None
    if count == 0:
        return 0

    def size(index: int) -> int:
        return int(np.shape(leaves(element_parts(dataset[index])[0])[0])[0])

    return (count - 1) * size(0) + size(count - 1)
