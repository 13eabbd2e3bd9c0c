"""KerasTuner hyperparameters as Optuna distributions. Pure: no TensorFlow, no KerasTuner import.

The space is KerasTuner's serialised form (``HyperParameters.get_config()``, discovered in the
child), in registration order, names kept; the mapping and what is refused:
``docs/guide/hypermodels.md``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)

from tuner.core.errors import WorkloadError

Space = list[dict[str, Any]]


def entries(space: Mapping[str, Any] | Space) -> Space:
    """The list of hyperparameter entries of a KerasTuner config (or of the list itself)."""
    return list(space["space"] if isinstance(space, Mapping) else space)


def distribution(entry: Mapping[str, Any]) -> BaseDistribution:
    """The Optuna distribution of one KerasTuner hyperparameter entry."""
    kind, config = entry["class_name"], entry["config"]
    name = config["name"]
    sampling = config.get("sampling") or "linear"
    if sampling not in ("linear", "log"):
        raise WorkloadError(
            f"hyperparameter {name!r} uses sampling={sampling!r}, which Optuna cannot sample; "
            "use 'linear' or 'log'"
        )
    if kind == "Int":
        step = int(config.get("step") or 1)
        if sampling == "log" and step != 1:
            raise WorkloadError(
                f"hyperparameter {name!r}: Optuna's log-scale integers take step 1, got {step}"
            )
        low, high = int(config["min_value"]), int(config["max_value"])
        high = low + (high - low) // step * step  # KerasTuner's last reachable value
        return IntDistribution(low, high, step=step, log=sampling == "log")
    if kind == "Float":
        float_step = config.get("step")
        lo, hi = float(config["min_value"]), float(config["max_value"])
        if sampling == "log":
            return FloatDistribution(lo, hi, log=True)
        return FloatDistribution(lo, hi, step=float(float_step) if float_step else None)
    if kind == "Choice":
        return CategoricalDistribution(list(config["values"]))
    if kind == "Boolean":
        return CategoricalDistribution([False, True])
    if kind == "Fixed":
        return CategoricalDistribution([config["value"]])
    raise WorkloadError(f"hyperparameter {name!r} is a KerasTuner {kind}, which tuner cannot map")


def default(entry: Mapping[str, Any]) -> Any:
    """KerasTuner's default of an entry (its minimum, first value or ``False`` when unset)."""
    kind, config = entry["class_name"], entry["config"]
    if kind == "Fixed":
        return config["value"]
    if config.get("default") is not None:
        return config["default"]
    if kind in ("Int", "Float"):
        return config["min_value"]
    if kind == "Choice":
        return config["values"][0]
    return False


def is_active(entry: Mapping[str, Any], values: Mapping[str, Any]) -> bool:
    """Whether every condition of ``entry`` holds for the values chosen so far."""
    parents = [condition["config"] for condition in entry["config"].get("conditions", [])]
    return all(p["name"] in values and values[p["name"]] in p["values"] for p in parents)


def defaults(space: Mapping[str, Any] | Space) -> dict[str, Any]:
    """The values KerasTuner builds with by default (inactive conditional entries left out)."""
    chosen: dict[str, Any] = {}
    for entry in entries(space):
        if is_active(entry, chosen):
            chosen[entry["config"]["name"]] = default(entry)
    return chosen


def suggest(trial: Any, space: Mapping[str, Any] | Space) -> dict[str, Any]:
    """Suggest every active hyperparameter on an Optuna ``trial``, parents before children."""
    chosen: dict[str, Any] = {}
    for entry in entries(space):
        if not is_active(entry, chosen):
            continue
        name = entry["config"]["name"]
        dist = distribution(entry)
        if isinstance(dist, CategoricalDistribution):
            chosen[name] = trial.suggest_categorical(name, list(dist.choices))
        else:
            assert isinstance(dist, IntDistribution | FloatDistribution)
            suggest = (
                trial.suggest_int if isinstance(dist, IntDistribution) else trial.suggest_float
            )
            chosen[name] = suggest(name, dist.low, dist.high, step=dist.step, log=dist.log)
    return chosen


def check(space: Mapping[str, Any] | Space) -> None:
    """Raise :class:`WorkloadError` if any entry cannot be mapped (before anything is stored)."""
    for entry in entries(space):
        distribution(entry)


def config_key(values: Mapping[str, Any]) -> str:
    """A stable text key of one model configuration (for grouping trials)."""
    return json.dumps(dict(sorted(values.items())), sort_keys=True, default=str)


def snippet(model_reference: str, kind: str, values: Mapping[str, Any]) -> str:
    """Python that rebuilds the model with KerasTuner at ``values``. ``kind`` says what the
    reference names: ``function`` (``build(hp)``), ``class`` (a ``HyperModel`` subclass) or
    ``instance`` (a ``HyperModel`` object)."""
    module, _, attribute = model_reference.partition(":")
    build = {
        "function": f"{attribute}(hp)",
        "class": f"{attribute}().build(hp)",
        "instance": f"{attribute}.build(hp)",
    }[kind]
    lines = [
        "import keras_tuner",
        f"from {module} import {attribute}",
        "",
        "hp = keras_tuner.HyperParameters()",
        *(f"hp.Fixed({name!r}, {value!r})" for name, value in values.items()),
        f"model = {build}",
    ]
    return "\n".join(lines) + "\n"
