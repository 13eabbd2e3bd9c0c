"""Inside the child: a fingerprint of the workload as the check loaded it, whole and in parts.

A baseline is reused by another study only when the whole fingerprint is the same, so an edit
the names do not show measures afresh; a study resumes only on the workload it measured,
compared part by part so the refusal says what changed. A function's code is its compiled code,
not its text: a notebook's function has no source file, and a comment changes no trial.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import sys
import types
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from tuner.core.protocol import Workload

PARTS = ("model function", "model configuration", "data function", "data samples")
"""The parts of a workload's fingerprint a resumed study compares, in the order said."""


def workload_digest(workload: Workload, model: Any, read: Mapping[str, Any]) -> str:
    """The fingerprint: :func:`workload_parts` and the source of the functions' modules."""
    digest = hashlib.sha256()
    for reference in (workload.model, workload.data or workload.dataset):
        digest.update(_source(str(reference)).encode())
    for part in workload_parts(workload, model, read).values():
        digest.update(part.encode())
    return digest.hexdigest()[:32]


def workload_parts(workload: Workload, model: Any, read: Mapping[str, Any]) -> dict[str, str]:
    """Each of :data:`PARTS`, hashed."""
    samples = hashlib.sha256()
    for split in sorted(read):
        for array in _arrays(read[split]):
            samples.update(array_bytes(array))
    texts = {
        "model function": _code_of(workload.model),
        "model configuration": _configuration(model),
        "data function": _code_of(workload.data or workload.dataset),
    }
    parts = {key: hashlib.sha256(text.encode()).hexdigest()[:16] for key, text in texts.items()}
    return {**parts, "data samples": samples.hexdigest()[:16]}


def array_bytes(array: Any) -> bytes:
    """What an array holds, as bytes to hash: its buffer, or for strings (whose object buffer holds
    addresses) each item with its length (so ``"ab", "c"`` is not ``"a", "bc"``)."""
    array = np.asarray(array)
    if array.dtype.kind != "O":
        return np.ascontiguousarray(array).tobytes()
    items = (item if isinstance(item, bytes) else str(item).encode() for item in array.ravel())
    return b"".join(len(item).to_bytes(8, "little") + item for item in items)


def _source(reference: str) -> str:
    """The source of the module ``module:function`` names, else the reference itself (a shipped
    function's module says nothing: its code is in :func:`workload_parts`)."""
    module = sys.modules.get(reference.partition(":")[0])
    try:
        return inspect.getsource(module) if module is not None else reference
    except (OSError, TypeError):  # no source on disk (a compiled or frozen module)
        return reference


def _code_of(reference: str | None) -> str:
    """The code of the function (or object) ``reference`` names, as the check loaded it."""
    module_name, _, name = str(reference).partition(":")
    module = sys.modules.get(module_name)
    value = getattr(module, name, None) if module is not None else None
    return str(reference) if value is None else _code(value, depth=0)


def _code(value: Any, depth: int) -> str:
    """A text that changes with what ``value`` computes: a function's compiled code, a class's
    methods (an object's, with its plain settings)."""
    if depth > 4:  # a deep cycle of classes: what is above says enough
        return ""
    function = inspect.unwrap(value) if callable(value) else value
    if isinstance(function, types.FunctionType | types.MethodType):
        plain: Any = getattr(function, "__func__", function)
        return _compiled(plain.__code__) + _plain(plain.__defaults__) + _plain(plain.__kwdefaults__)
    cls = value if isinstance(value, type) else type(value)
    methods = [
        f"{klass.__qualname__}.{key}:{_code(member, depth + 1)}"
        for klass in cls.__mro__
        if klass.__module__.partition(".")[0] not in ("builtins", "keras", "keras_tuner")
        for key, member in sorted(vars(klass).items())
        if isinstance(member, types.FunctionType)
    ]
    settings = "" if isinstance(value, type) else _plain(getattr(value, "__dict__", None))
    return cls.__qualname__ + "".join(methods) + settings


def _compiled(code: types.CodeType) -> str:
    consts = [_compiled(c) if isinstance(c, types.CodeType) else _plain(c) for c in code.co_consts]
    return code.co_code.hex() + repr(code.co_names) + repr(consts)


def _plain(value: Any) -> str:
    """``value`` as text where plain data; else its type (its text may hold an address)."""
    if isinstance(value, frozenset | set):
        return "{" + ",".join(sorted(_plain(v) for v in value)) + "}"
    if isinstance(value, tuple | list):
        return "(" + ",".join(_plain(v) for v in value) + ")"
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda item: str(item[0]))
        return "{" + ",".join(f"{k!r}:{_plain(v)}" for k, v in items) + "}"
    if value is None or isinstance(value, bool | int | float | str | bytes):
        return repr(value)
    return type(value).__qualname__


def _configuration(model: Any) -> str:
    try:
        return json.dumps(model.get_config(), sort_keys=True, default=str)
    except Exception:  # a subclassed model without get_config: its size still counts
        # Imported here: the digest stays free of Keras for the processes that only hash code.
        from tuner.worker.hypermodel import parameter_count

        return str(parameter_count(model))


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
