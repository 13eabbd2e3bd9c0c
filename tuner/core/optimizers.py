"""The optimizer a trial trains with, as a Keras config (``optimizer.get_config()``): pure, so that
the worker (which builds it) and the export (which writes it) can never disagree. A *serialized*
optimizer is what ``keras.optimizers.serialize`` writes. The ``linear-warmup`` ramp is stock
Keras (``CosineDecay`` with a warm-up and a flat decay): a script needs nothing of tuner's.
"""

from __future__ import annotations

from typing import Any

from tuner.core.keras_names import optimizer_class
from tuner.core.scaling import optimizer_settings

SHAPING_RULES = ("linear-warmup", "sqrt-adam")
"""The rules that change more of the optimizer than its learning rate."""
SCHEDULES_MODULE = "keras.optimizers.schedules"
OPTIMIZERS_MODULE = "keras.optimizers"


def warmup_schedule(start: float, peak: float, steps: int) -> dict[str, Any]:
    """The serialized Keras schedule of ``linear-warmup``: ``start`` → ``peak`` linearly over
    ``steps`` optimizer steps, then ``peak``: ``CosineDecay`` whose ``alpha=1`` flattens the
    cosine, and whose ``decay_steps=1``, not 0, keeps it away from 0/0."""
    config = {
        "initial_learning_rate": float(start),
        "decay_steps": 1,
        "alpha": 1.0,
        "name": "linear_warmup",
        "warmup_target": float(peak),
        "warmup_steps": int(steps),
    }
    return serialized("CosineDecay", config, SCHEDULES_MODULE)


def trained_config(config: dict[str, Any], rule: dict[str, Any] | None) -> dict[str, Any]:
    """A copy of the optimizer ``config`` with ``rule`` (a request's ``LearningRateRule`` as a
    dict, warm-up in steps) applied: ``sqrt-adam``'s moments, ``linear-warmup``'s schedule; other
    rules change nothing. ``ValueError``: ``sqrt-adam`` on an optimizer without Adam's moments."""
    trained = dict(config)
    if not rule or rule["name"] not in SHAPING_RULES:
        return trained
    if rule["name"] == "sqrt-adam":
        trained.update(optimizer_settings("sqrt-adam", float(rule["ratio"]), trained))
    else:
        trained["learning_rate"] = warmup_schedule(
            rule["base_lr"], rule["learning_rate"], int(rule["warmup_steps"])
        )
    return trained


def serialized(
    class_name: str,
    config: dict[str, Any],
    module: str | None = OPTIMIZERS_MODULE,
    registered_name: str | None = None,
) -> dict[str, Any]:
    """An optimizer as ``keras.optimizers.serialize`` writes it (a registered ``package>Name``)."""
    return {
        "module": module,
        "class_name": class_name,
        "config": dict(config),
        "registered_name": registered_name,
    }


def from_description(
    described: dict[str, Any] | None, fallback_class: str, learning_rate: float
) -> dict[str, Any]:
    """The serialized optimizer rebuilt from a trial's ``optimizer`` description (a study stored
    before Keras configs were): its class and trained settings at ``learning_rate``; without
    one, ``fallback_class`` with Keras's defaults."""
    fallback_class = optimizer_class(fallback_class)
    if not described:
        return serialized(fallback_class, {"learning_rate": float(learning_rate)})
    skip = {"class", "from_build", "warmup", "keras", "name"}
    config = {key: value for key, value in described.items() if key not in skip}
    config["learning_rate"] = float(learning_rate)
    warmup = described.get("warmup")
    if warmup:
        config["learning_rate"] = warmup_schedule(warmup["from"], warmup["to"], warmup["steps"])
    return serialized(optimizer_class(str(described.get("class", fallback_class))), config)
