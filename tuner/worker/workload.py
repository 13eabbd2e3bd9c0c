"""Inside the child: the workload's optimizer and loss, by name or as Keras serialized them;
what is wrong with them a :class:`WorkloadError` (status ``invalid``: a mistake to fix).
"""

from __future__ import annotations

import copy
import difflib
import json
import types
from collections.abc import Mapping
from typing import Any

import keras

from tuner.core.errors import WorkloadError
from tuner.core.spec import KerasObject


def make_optimizer(spec: KerasObject, learning_rate: float) -> Any:
    """A Keras optimizer by name (``adam``, ``sgd``, ...) or serialized, at ``learning_rate``:
    a serialized optimizer's own ``learning_rate`` is replaced (the rate is the rule's)."""
    if isinstance(spec, str):
        try:
            return keras.optimizers.get(
                {"class_name": spec, "config": {"learning_rate": learning_rate}}
            )
        except (ValueError, TypeError) as exc:
            raise WorkloadError(f"unknown Keras optimizer {spec!r}: {exc}") from exc
    config = {**copy.deepcopy(dict(spec.get("config") or {})), "learning_rate": learning_rate}
    made = _deserialize("optimizer", {**spec, "config": config}, spec)
    if not isinstance(made, keras.optimizers.Optimizer):
        raise _unknown("optimizer", spec, keras.optimizers.Optimizer)
    return made


def make_loss(spec: KerasObject) -> Any:
    """The spec's loss for ``model.compile``: a name as it is, a serialized loss deserialized."""
    if isinstance(spec, str):
        return spec
    made = _deserialize("loss", copy.deepcopy(spec), spec)
    if not isinstance(made, keras.losses.Loss | types.FunctionType):
        raise _unknown("loss", spec, keras.losses.Loss)
    return made


def check_loss(spec: KerasObject) -> None:
    """Raise :class:`WorkloadError` unless ``spec`` is a Keras loss."""
    if not isinstance(spec, str):
        make_loss(spec)
        return
    try:
        keras.losses.get(spec)
    except (ValueError, TypeError) as exc:
        raise WorkloadError(f"unknown Keras loss {spec!r}") from exc


def _deserialize(role: str, spec: Mapping[str, Any], given: Mapping[str, Any]) -> Any:
    """Keras's ``deserialize`` of ``spec``; what Keras said in one line, naming ``given``."""
    module = keras.losses if role == "loss" else keras.optimizers
    try:
        return module.deserialize(dict(spec))
    except Exception as exc:  # Keras raises TypeError, ValueError, ... for a bad config
        text = str(exc)
        # Keras wraps the constructor's error in a paragraph; its last line says what was wrong.
        said = text.rpartition("Exception encountered:")[2].strip() or text
        line = " ".join(said.split())[:300]
        raise WorkloadError(f"[workload] {role} {_shown(given)}: Keras says: {line}") from exc


def _unknown(role: str, spec: Mapping[str, Any], kind: type) -> WorkloadError:
    """Keras's ``deserialize`` hands back an unknown ``class_name`` as the string itself (and a
    known class of another kind as that object): say so, with the nearest class Keras has."""
    name = str(spec.get("class_name"))
    module = keras.losses if role == "loss" else keras.optimizers
    known = [
        attr
        for attr in dir(module)
        if isinstance(getattr(module, attr), type) and issubclass(getattr(module, attr), kind)
    ]
    near = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean {near[0]!r}?" if near else ""
    return WorkloadError(
        f"[workload] {role} {_shown(spec)}: Keras has no {role} class {name!r}{hint}"
    )


def _shown(spec: Mapping[str, Any]) -> str:
    """A serialized object in a few words: its class and config as TOML would write them."""
    config = (spec.get("config") or {}).items()
    settings = ", ".join(f"{key} = {json.dumps(value, default=str)}" for key, value in config)
    return f"{{class_name = {json.dumps(spec.get('class_name'))}, config = {{{settings}}}}}"
