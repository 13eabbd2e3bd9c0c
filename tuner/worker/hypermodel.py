"""Inside the child: a workload's ``model`` may be a KerasTuner hypermodel, used unchanged.

:func:`discover` builds each non-default ``Choice`` or ``Boolean`` value once more, so that
conditional hyperparameters behind it are found; :func:`build` fixes each value as ``hp.Fixed``.
"""

from __future__ import annotations

import contextlib
import inspect
import math
from collections.abc import Callable, Mapping
from typing import Any

import keras

from tuner.core.errors import WorkloadError, error_line
from tuner.workloads import resolve

_MAX_DISCOVERY_BUILDS = 32


def kind_of(target: Any) -> str:
    """``plain``, ``function`` (takes ``hp``), ``class`` or ``instance`` (a ``HyperModel``)."""
    try:
        import keras_tuner
    except ImportError:  # without KerasTuner only plain builders exist
        keras_tuner = None
    if keras_tuner is not None:
        if isinstance(target, type) and issubclass(target, keras_tuner.HyperModel):
            return "class"
        if isinstance(target, keras_tuner.HyperModel):
            return "instance"
    if not callable(target):
        raise WorkloadError(f"{target!r} is neither a model builder nor a KerasTuner HyperModel")
    try:
        parameters = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):
        return "plain"
    required = [
        p
        for p in parameters
        if p.default is inspect.Parameter.empty
        and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    return "function" if required else "plain"


def _builder(reference: str) -> tuple[str, Callable[[Any], Any]]:
    target = resolve(reference, allow_hypermodel=True)
    kind = kind_of(target)
    if kind == "plain":
        return kind, lambda hp: target()
    if kind == "function":
        return kind, target
    hypermodel: Any = target() if kind == "class" else target
    return kind, hypermodel.build


def _call(reference: str, build: Callable[[Any], Any], hp: Any) -> Any:
    try:
        model = build(hp)
    except WorkloadError:
        raise
    except Exception as exc:
        raise WorkloadError(f"{reference} raised {error_line(exc)}") from exc
    if not isinstance(model, keras.Model):
        raise WorkloadError(f"{reference} must return a keras.Model, got {type(model).__name__}")
    return model


def build(reference: str, values: Mapping[str, Any] | None = None) -> Any:
    """Build the workload's model; a hypermodel at ``values`` (its defaults where unset)."""
    kind, builder = _builder(reference)
    if kind == "plain":
        return _call(reference, builder, None)
    import keras_tuner

    hp = keras_tuner.HyperParameters()
    for name, value in (values or {}).items():
        hp.Fixed(name, value)
    return _call(reference, builder, hp)


def discover(reference: str) -> dict[str, Any] | None:
    """The hypermodel's kind and space (KerasTuner's config), or ``None`` for a plain builder."""
    kind, builder = _builder(reference)
    if kind == "plain":
        return None
    import keras_tuner

    hp = keras_tuner.HyperParameters()
    _call(reference, builder, hp)
    space: list[dict[str, Any]] = hp.get_config()["space"]
    names = {entry["config"]["name"] for entry in space}
    tried: set[tuple[str, str]] = set()
    builds = 1
    for entry in space:  # grows with the hyperparameters found behind a value
        config = entry["config"]
        if entry["class_name"] == "Choice":
            default = config.get("default", config["values"][0])
            others = [v for v in config["values"] if v != default]
        elif entry["class_name"] == "Boolean":
            others = [not config.get("default", False)]
        else:
            continue
        for value in others:
            key = (config["name"], repr(value))
            if key in tried or builds >= _MAX_DISCOVERY_BUILDS:
                continue
            tried.add(key)
            probe = keras_tuner.HyperParameters()
            probe.Fixed(config["name"], value)
            _call(reference, builder, probe)
            builds += 1
            for found in probe.get_config()["space"]:
                if found["config"]["name"] not in names:
                    names.add(found["config"]["name"])
                    space.append(found)
    return {"kind": kind, "space": space}


class _FitRecorder:
    """Stands in for the model in ``HyperModel.fit`` to see the arguments it would pass."""

    def __init__(self) -> None:
        self.kwargs: dict[str, Any] = {}

    def fit(self, *args: Any, **kwargs: Any) -> None:
        self.kwargs = kwargs


def check_fit(reference: str, x: Any, y: Any) -> list[str] | None:
    """For a ``HyperModel`` that overrides ``fit`` (which tuner never calls), the hyperparameters it
    declares (``[]``: none), ``batch_size`` among them where it sets one (tuner searches the batch
    itself); ``None`` when ``fit`` is KerasTuner's own or the model is no ``HyperModel``."""
    import keras_tuner

    target = resolve(reference, allow_hypermodel=True)
    kind = kind_of(target)
    if kind not in ("class", "instance"):
        return None
    hypermodel: Any = target() if kind == "class" else target
    if type(hypermodel).fit is keras_tuner.HyperModel.fit:
        return None
    recorder = _FitRecorder()
    hp = keras_tuner.HyperParameters()  # records what the override declares
    # A fit that does more than call model.fit is judged by what it passed before failing.
    with contextlib.suppress(Exception):
        hypermodel.fit(hp, recorder, x, y)
    declared = [entry["config"]["name"] for entry in hp.get_config()["space"]]
    if "batch_size" in recorder.kwargs and "batch_size" not in declared:
        declared.append("batch_size")  # a constant one: unused all the same
    return declared


def layer_summary(model: Any) -> list[str]:
    """The architecture in short: each layer's class with its units, activation and rate."""
    summary = []
    for layer in model.layers:
        config = layer.get_config()
        parts = [f"{k}={config[k]}" for k in ("units", "activation", "rate") if k in config]
        summary.append(f"{type(layer).__name__}({', '.join(parts)})")
    return summary


def parameter_count(model: Any) -> int:
    """``model.count_params()``, or for a model Keras never built as a whole (keras-io's VAE) the
    sizes of the weights its layers hold."""
    if getattr(model, "built", True):
        return int(model.count_params())
    return sum(math.prod(int(d) for d in weight.shape) for weight in model.weights)
