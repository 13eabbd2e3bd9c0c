"""The objective: the value trials store and compare as their loss (pure).

The validation loss by default; or another value the evaluation logs (``"val_mae"``) or the
training loss (``"loss"``). Its direction is inferred as Keras and KerasTuner infer it (``acc``,
``auc``, ``precision``, ``recall``: maximized) or given. Every comparison in tuner minimizes, so a
maximized objective is refused in one line rather than compared the wrong way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tuner.core.errors import ConfigError

DEFAULT_OBJECTIVE = "val_loss"
"""The validation loss: what every study compared before objectives could be named."""
TRAINING_LOSS = "loss"
"""The one training value a trial can hold as its objective: the last epoch's training loss."""
VALIDATION_PREFIX = "val_"
DIRECTIONS = ("min", "max")
_MAXIMIZED = ("acc", "auc", "precision", "recall")
"""What a maximized metric's name contains (Keras's old ``mode="auto"``, KerasTuner's names)."""


def logged_name(objective: str) -> str:
    """The objective's key in ``evaluate``'s (or ``fit``'s) logs: ``val_mae`` -> ``mae``."""
    return objective.removeprefix(VALIDATION_PREFIX)


def is_validation(objective: str) -> bool:
    """Whether the objective is measured on the validation set (a ``val_`` name)."""
    return objective.startswith(VALIDATION_PREFIX)


def infer_direction(objective: str) -> str:
    """``max`` for a name with ``acc``, ``auc``, ``precision`` or ``recall`` (no loss), else min."""
    name = logged_name(objective).lower()
    if name.endswith("loss"):
        return "min"
    return "max" if any(part in name for part in _MAXIMIZED) else "min"


def parse_objective(value: Any, label: str) -> str:
    """The objective's name from the spec: ``"val_mae"`` or ``{name = ..., direction = ...}``;
    :class:`ConfigError` naming ``label`` for a bad value or a maximized objective."""
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - {"name", "direction"})
        if unknown or "name" not in value:
            raise ConfigError(
                f'{label} must be a name ("val_mae") or {{name = "val_mae", direction = "min"}}, '
                f"got {dict(value)!r}"
            )
        name, direction = _name(value["name"], label), value.get("direction")
        if direction is not None and direction not in DIRECTIONS:
            raise ConfigError(f"{label}: direction must be min or max, got {direction!r}")
    else:
        name, direction = _name(value, label), None
    direction = direction or infer_direction(name)
    if direction == "max":
        raise ConfigError(
            f"{label}: {name} is maximized, and tuner compares trials by a value to minimize "
            "(recommendation, early stop, racing, the LR law); name one to minimize, such as "
            f"{DEFAULT_OBJECTIVE} or val_mae"
        )
    return name


def _name(value: Any, label: str) -> str:
    """A validation value (``val_...``) or the training loss."""
    text = value.strip() if isinstance(value, str) else ""
    valid = text == TRAINING_LOSS or (is_validation(text) and len(text) > len(VALIDATION_PREFIX))
    if not valid or any(c.isspace() for c in text):
        raise ConfigError(
            f"{label} must name a value the evaluation logs with its val_ prefix (val_mae), or "
            f"the training loss (loss), got {value!r}"
        )
    return text


def missing_line(objective: str, reported: list[str]) -> str:
    """Refuse a workload that does not report ``objective``: what it reports, what to set."""
    kind = "evaluation" if is_validation(objective) else "training"
    names = ", ".join(reported) or "nothing"
    line = f"the {kind} reports {names}, not {logged_name(objective)}"
    if is_validation(objective):
        minimized = [name for name in reported if infer_direction(name) == "min"]
        if minimized:
            return f'{line}: set [workload] objective = "{VALIDATION_PREFIX}{minimized[0]}"'
    return f"{line}: set [workload] objective to one of them"
