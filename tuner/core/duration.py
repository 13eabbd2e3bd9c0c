"""Durations as people write them (``90s``, ``15m``, ``1h30m``): ``--budget``'s parser and its
printed form. Imports nothing of tuner's but the errors, so the spec can use it."""

from __future__ import annotations

import math
import re
from typing import Any

from tuner.core.errors import ConfigError

_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s)?")


def parse_duration(value: Any, label: str) -> float:
    """Seconds of ``value``: a number of seconds, or text such as ``90s``, ``15m``, ``1h``,
    ``1h30m`` (a bare number is seconds). Raises :class:`ConfigError` naming ``label``."""
    seconds: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip().lower().replace(" ", "")
        if re.fullmatch(r"\d+(?:\.\d+)?", text):
            seconds = float(text)
        else:
            found = _DURATION.fullmatch(text)
            if found and text and any(found.groups()):
                hours, minutes, secs = (float(g) if g else 0.0 for g in found.groups())
                seconds = hours * 3600 + minutes * 60 + secs
    if seconds is None or not math.isfinite(seconds) or seconds <= 0:
        raise ConfigError(
            f"{label} must be a positive duration such as 90s, 15m, 1h or 1h30m, got {value!r}"
        )
    return seconds


def format_budget(seconds: float) -> str:
    """A budget as a user writes it: ``90s``, ``15m``, ``1h30m``."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    text = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "")
    return text + (f"{secs}s" if secs or not text else "")
