"""Checks of single spec fields: each returns the field's value, normalised, or raises
:class:`ConfigError` naming the field by ``label`` (its key in the file, or the flag that set it).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tuner.core.errors import ConfigError
from tuner.core.scaling import ADAM_FAMILY, KERAS_ADAM, LR_RULES, optimizer_settings
from tuner.core.typos import closest

REFERENCE_PATTERN = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
"""A ``module:function`` reference."""


def check_sqrt_adam(optimizer: str, base: int, multipliers: tuple[int, ...], label: str) -> None:
    """``sqrt-adam`` needs an Adam-family optimizer and ratios its betas survive (checked with
    Keras's Adam defaults here; the child checks the optimizer's own settings again)."""
    if optimizer.lower() not in ADAM_FAMILY:
        raise ConfigError(
            f"{label}: the sqrt-adam rule rescales Adam's moments, but the optimizer is "
            f"{optimizer!r}; use adam or adamw, or drop the rule"
        )
    for multiplier in multipliers:
        try:
            optimizer_settings("sqrt-adam", float(multiplier), KERAS_ADAM)
        except ValueError as exc:
            raise ConfigError(f"{label}: {exc}") from None


def string(value: Any, label: str) -> str:
    """A non-empty string, stripped."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{label} must be a non-empty string, got {value!r}")
    return value.strip()


def reference(value: Any, label: str) -> str:
    """A ``module:function`` reference."""
    text = string(value, label)
    if not REFERENCE_PATTERN.match(text):
        raise ConfigError(
            f"{label} must be 'module:function' (e.g. 'mypkg.models:build'), got {text!r}"
        )
    return text


def positive_int(value: Any, label: str) -> int:
    """A positive integer (not a bool, not a float)."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{label} must be a positive integer, got {value!r}")
    return value


def positive_float(value: Any, label: str) -> float:
    """A finite positive number, as a float."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{label} must be a positive number, got {value!r}")
    return float(value)


def switch(value: Any, label: str) -> bool:
    """``true`` or ``false``."""
    if not isinstance(value, bool):
        raise ConfigError(f"{label} must be true or false")
    return value


def seed(value: Any, label: str) -> int:
    """A non-negative integer."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConfigError(f"{label} must be a non-negative integer, got {value!r}")
    return value


def seconds(value: Any, label: str) -> float:
    """0 (off, or no wait) or a positive number of seconds."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or not (math.isfinite(value) and value >= 0):
        raise ConfigError(f"{label} must be 0 or a positive number of seconds")
    return float(value)


def rates(value: Any, label: str) -> int:
    """The learning rates of a sweep: 0 (no sweep) or at least 3 (a parabola needs three)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value in (1, 2):
        raise ConfigError(
            f"{label} must be 0 (no sweep) or a number of rates of at least 3, got {value!r}"
        )
    return value


_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s)?")


def parse_duration(value: Any, label: str) -> float:
    """Seconds of ``value``: a number of seconds, or text such as ``90s``, ``15m``, ``1h30m``
    (:class:`ConfigError` naming ``label`` otherwise)."""
    seconds: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip().lower().replace(" ", "")
        if re.fullmatch(r"\d+(?:\.\d+)?", text):
            seconds = float(text)
        else:
            found = _DURATION.fullmatch(text)
            if found and any(found.groups()):
                hours, minutes, secs = (float(g) if g else 0.0 for g in found.groups())
                seconds = hours * 3600 + minutes * 60 + secs
    if seconds is None or not math.isfinite(seconds) or seconds <= 0:
        raise ConfigError(
            f"{label} must be a positive duration such as 90s, 15m, 1h or 1h30m, got {value!r}"
        )
    return seconds


def duration(value: Any, label: str) -> float | None:
    """:func:`parse_duration`, ``None`` when not given."""
    return None if value is None else parse_duration(value, label)


def finite(value: Any, label: str) -> float:
    """A finite number, as a float."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{label} must be a finite number, got {value!r}")
    return float(value)


def fraction(value: Any, label: str) -> float:
    """A number in [0, 1), as a float (a relative tolerance)."""
    number = finite(value, label)
    if not 0 <= number < 1:
        raise ConfigError(f"{label} must be in [0, 1), got {value!r}")
    return number


def choice(value: Any, label: str, choices: tuple[str, ...]) -> str:
    """One of ``choices``."""
    text = string(value, label)
    if text not in choices:
        raise ConfigError(f"{label} must be one of {', '.join(choices)}, got {text!r}")
    return text


def int_list(value: Any, label: str) -> tuple[int, ...]:
    """A non-empty list of distinct positive integers, in the given order."""
    if not isinstance(value, list | tuple) or not value:
        raise ConfigError(f"{label} must be a non-empty list of positive integers, got {value!r}")
    items = tuple(positive_int(item, label) for item in value)
    duplicates = sorted({item for item in items if items.count(item) > 1})
    if duplicates:
        raise ConfigError(f"{label} lists {duplicates[0]} more than once; give each value once")
    return items


def rule_list(value: Any, label: str) -> tuple[str, ...]:
    """A non-empty list of distinct known learning-rate rules, in the given order."""
    if not isinstance(value, list | tuple) or not value:
        raise ConfigError(f"{label} must be a non-empty list of rule names, got {value!r}")
    rules = tuple(string(item, label) for item in value)
    for rule in rules:
        if rule not in LR_RULES:
            raise ConfigError(
                f"{label}: unknown learning-rate rule {rule!r}; known rules: {', '.join(LR_RULES)}"
            )
    if len(set(rules)) != len(rules):
        raise ConfigError(f"{label} lists a rule more than once; give each rule once")
    return rules


@dataclass(frozen=True)
class Table:
    """One section of a raw spec, and how its fields are named in error lines."""

    section: str
    values: Mapping[str, Any]
    source: str
    where: Mapping[str, str]

    def label(self, key: str) -> str:
        dotted = f"{self.section}.{key}"
        return self.where.get(dotted, f"{dotted} in {self.source}")

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def exactly_one(self, first: tuple[str, str], second: tuple[str, str]) -> str:
        """The one of two exclusive keys that is given (each ``(key, what it is)``)."""
        given = [key for key, _ in (first, second) if self.values.get(key) is not None]
        if len(given) != 1:
            (a, a_help), (b, b_help) = first, second
            raise ConfigError(
                f"[{self.section}] in {self.source} needs exactly one of {a} ({a_help}) and "
                f"{b} ({b_help}); " + ("both are given" if given else "neither is given")
            )
        return given[0]

    def need(self, key: str) -> Any:
        if key not in self.values:
            raise ConfigError(f"{self.section}.{key} is missing in {self.source}")
        return self.values[key]


def parse_int_list(text: str, flag: str) -> list[int]:
    """Parse a comma-separated CLI list of integers such as ``"1,2,4"``."""
    parts = [part.strip() for part in text.split(",")]
    try:
        if text.strip() and all(parts):
            return [int(part) for part in parts]
    except ValueError:
        pass
    raise ConfigError(f"{flag} must be comma-separated integers such as 1,2,4, got {text!r}")


def parse_name_list(text: str, flag: str) -> list[str]:
    """Parse a comma-separated CLI list of names such as ``"none,linear"``."""
    parts = [part.strip() for part in text.split(",")]
    if not text.strip() or any(not part for part in parts):
        raise ConfigError(f"{flag} must be comma-separated names such as none,sqrt, got {text!r}")
    return parts


def check_layout(raw: Mapping[str, Any], source: str, known: Mapping[str, tuple[str, ...]]) -> None:
    """Only ``known`` sections of known keys; an unknown key is told with the nearest known."""
    for section, value in raw.items():
        if section not in known:
            raise ConfigError(f"unknown section [{section}] in {source}; known: {', '.join(known)}")
        if not isinstance(value, dict):
            raise ConfigError(f"[{section}] in {source} must be a table")
        unknown = sorted(set(value) - set(known[section]))
        if unknown:
            near = closest(unknown[0], known[section])
            hint = (
                f"did you mean {section}.{near}?"
                if near
                else f"known keys of [{section}]: {', '.join(known[section])}"
            )
            raise ConfigError(f"unknown key {section}.{unknown[0]} in {source}; {hint}")


def check_study_name(name: str, label: str) -> str:
    """``name`` when it may name a study (one rule for ``[study] name`` and ``--study-name``)."""
    if re.fullmatch(r"[\w.\-]+", name) is None:
        raise ConfigError(f"{label} must use letters, digits, '.', '_' or '-' only, got {name!r}")
    return name


SHIPPED_MODULE = "tuner_shipped"
"""The module of a study's shipped functions (``tuner_shipped:build_model``): tuner's, never
the user's, so a message names the function instead (:func:`shown_reference`)."""


def shown_reference(value: object) -> str:
    """A workload reference as a message shows it: ``'mymodel:load_data'``, or a shipped function
    as ``load_data (a function given to tuner.search)``."""
    if isinstance(value, str) and value.startswith(f"{SHIPPED_MODULE}:"):
        return f"{value.partition(':')[2]} (a function given to tuner.search)"
    return repr(value)
