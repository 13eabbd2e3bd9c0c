"""Inside the child: a fingerprint of the workload as the check loaded it.

A baseline stored by one study is reused by another (:mod:`tuner.driver.reuse.baseline_reuse`) only
when this fingerprint is the same, so an edit the workload's names do not show (another
activation, another augmentation, other data under the same function) measures afresh. It hashes
the source of the modules that define the model and the data functions, the built model's
configuration, and the first samples of each split the check read.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from tuner.core.protocol import Workload


def workload_digest(workload: Workload, model: Any, read: Mapping[str, Any]) -> str:
    """The fingerprint of ``workload`` (its ``model`` and ``data`` references), the ``model`` it
    built and the samples ``read`` of each split."""
    digest = hashlib.sha256()
    for reference in (workload.model, workload.data):
        digest.update(_source(str(reference)).encode())
    digest.update(_configuration(model).encode())
    for split in sorted(read):
        for array in _arrays(read[split]):
            digest.update(array_bytes(array))
    return digest.hexdigest()[:32]


def array_bytes(array: Any) -> bytes:
    """What an array holds, as bytes to hash: its buffer, or for strings (an object array of
    ``bytes``, whose buffer holds addresses that change with every process) each item's
    contents with its length (so ``"ab", "c"`` is not ``"a", "bc"``)."""
    array = np.asarray(array)
    if array.dtype.kind != "O":
        return np.ascontiguousarray(array).tobytes()
    items = (item if isinstance(item, bytes) else str(item).encode() for item in array.ravel())
    return b"".join(len(item).to_bytes(8, "little") + item for item in items)


def _source(reference: str) -> str:
    """The source of the module ``module:function`` names (loaded by the check already), else
    the reference itself."""
    module = sys.modules.get(reference.partition(":")[0])
    try:
        return inspect.getsource(module) if module is not None else reference
    except (OSError, TypeError):  # no source on disk (a compiled or frozen module)
        return reference


def _configuration(model: Any) -> str:
    try:
        return json.dumps(model.get_config(), sort_keys=True, default=str)
    except Exception:  # a subclassed model without get_config: its size still counts
        return str(model.count_params())


def _arrays(structure: Any) -> Iterator[Any]:
    """Every array of a nested structure (tuples, lists, dicts by sorted key)."""
    if isinstance(structure, Mapping):
        for key in sorted(structure):
            yield from _arrays(structure[key])
    elif isinstance(structure, list | tuple):
        for part in structure:
            yield from _arrays(part)
    elif structure is not None:
        yield np.asarray(structure)
