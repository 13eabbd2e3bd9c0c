"""Frozen dataclasses to JSON-ready values and back, checked against their type hints: a message
that lacks a field, has one too many or one of the wrong type fails with one line naming the field,
not with a ``KeyError`` deep inside a trial.
"""

from __future__ import annotations

import json
import types
from collections.abc import Mapping
from dataclasses import MISSING, fields, is_dataclass
from typing import Any, TypeVar, Union, get_args, get_origin, get_type_hints

T = TypeVar("T")

PROTOCOL_VERSION = 1
"""The version of the request, event and result shapes: raise it with any change of a shape."""

VERSION_KEY = "protocol_version"


class ProtocolError(ValueError):
    """A message between the driver and a child that does not read as this protocol."""


class ProtocolVersionError(ProtocolError):
    """A message of another protocol version: the driver and the worker differ."""


class NotJSONError(ProtocolError):
    """A message that is not a JSON object at all."""


_HINTS: dict[type, dict[str, Any]] = {}


def to_plain(value: Any) -> Any:
    """``value`` as JSON-ready data: dataclasses as objects of their fields, tuples as lists."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Mapping):
        return {str(key): to_plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [to_plain(item) for item in value]
    return value


def from_plain(kind: type[T], data: Any, where: str) -> T:
    """The dataclass ``kind`` read from ``data`` (what :func:`to_plain` wrote); a field with a
    default may be absent. ``where``: the path that errors name."""
    if not isinstance(data, Mapping):
        raise ProtocolError(f"{where}: expected an object, got {type(data).__name__}")
    declared = {f.name: f for f in fields(kind) if f.init}  # type: ignore[arg-type]
    unknown = sorted(set(data) - set(declared))
    if unknown:
        raise ProtocolError(f"{where}: unknown field {unknown[0]!r}")
    # Resolved once per type: an event type is read about once a second.
    hints = _HINTS.get(kind) or _HINTS.setdefault(kind, get_type_hints(kind))
    values: dict[str, Any] = {}
    for name, declared_field in declared.items():
        if name in data:
            values[name] = _value(hints[name], data[name], f"{where}.{name}")
        elif declared_field.default is MISSING and declared_field.default_factory is MISSING:
            raise ProtocolError(f"{where}: missing field {name!r}")
    return kind(**values)


def load_message(text: str, what: str, reader: str) -> dict[str, Any]:
    """``text``, a request or result (``what``), as its JSON object less the version key:
    :class:`NotJSONError` when it is no JSON object, :class:`ProtocolVersionError` when it is of
    another protocol version than this ``reader``'s (``worker`` or ``driver``)."""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise NotJSONError(f"the {what} is not a JSON object")
    found = data.pop(VERSION_KEY, None)
    if found != PROTOCOL_VERSION:
        written = "of no protocol version" if found is None else f"of protocol version {found}"
        raise ProtocolVersionError(
            f"the {what} is {written} and this {reader} reads version {PROTOCOL_VERSION}: "
            "driver and worker are different tuner versions"
        )
    return data


def _value(hint: Any, value: Any, where: str) -> Any:
    """``value`` checked (and converted: tuples, floats, nested dataclasses) as ``hint`` says."""
    origin = get_origin(hint)
    if hint is Any:
        return value
    if origin is Union or origin is types.UnionType:
        return _union(get_args(hint), value, where)
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise ProtocolError(f"{where}: expected a list, got {type(value).__name__}")
        item = get_args(hint)[0]
        return tuple(_value(item, v, f"{where}[{i}]") for i, v in enumerate(value))
    if origin is Mapping or origin is dict:
        if not isinstance(value, Mapping):
            raise ProtocolError(f"{where}: expected an object, got {type(value).__name__}")
        return dict(value)
    if is_dataclass(hint):
        return from_plain(hint, value, where)  # type: ignore[arg-type]
    return _scalar(hint, value, where)


def _union(options: tuple[Any, ...], value: Any, where: str) -> Any:
    if value is None and type(None) in options:
        return None
    errors = []
    for option in [option for option in options if option is not type(None)]:
        try:
            return _value(option, value, where)
        except ProtocolError as exc:
            errors.append(exc)
    raise errors[0]


def _scalar(hint: Any, value: Any, where: str) -> Any:
    # bool is an int to Python, never to the protocol; an int is a float's value in JSON.
    if hint is bool and isinstance(value, bool):
        return value
    if hint is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if hint is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if hint is str and isinstance(value, str):
        return value
    if hint in (bool, int, float, str):
        raise ProtocolError(f"{where}: expected {hint.__name__}, got {value!r}")
    raise TypeError(f"{where}: the protocol has no conversion for {hint!r}")
