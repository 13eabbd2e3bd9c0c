"""Progress that tells time: the ETA, durations and budgets for people, the child's step reports.
Pure: the clock is passed in."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence

from tuner.core.protocol import Event, ProgressEvent

REPORT_EVERY_S = 1.0
"""How often a trial child reports its steps at most: a live bar, at no cost next to training."""


def format_duration(seconds: float) -> str:
    """A duration for people: ``31 s``, ``2 min``, ``1 h 05 min``."""
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    if minutes < 90:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def format_budget(seconds: float) -> str:
    """A budget as a user writes it: ``90s``, ``15m``, ``1h30m``."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    text = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "")
    return text + (f"{secs}s" if secs or not text else "")


def format_eta(seconds: float | None) -> str:
    """``ETA 2 min``; ``ETA -`` while there is nothing to go by; ``done`` at the end."""
    if seconds is None:
        return "ETA -"
    return "done" if seconds <= 0 else f"ETA {format_duration(seconds)}"


SEPARATOR = " · "


def wrap_parts(head: str, parts: Sequence[str], width: int, indent: int = 4) -> list[str]:
    """``head`` and ``parts`` joined (:func:`joined`) in lines of at most ``width``, broken only
    between parts; later lines indented by ``indent``; a part longer than a line has its own."""
    lines: list[str] = []
    line = head
    for part in parts:
        joined = _joined(line, part)
        if len(joined) <= width or not line.strip():
            line = joined
            continue
        lines.append(line)
        line = " " * indent + part
    lines.append(line)
    return lines


ELLIPSIS = "…"
_TOKEN_BREAKS = "/(;:=|,"
"""Where a word longer than the room may still be cut: between its tokens."""


def clipped(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, cut with ``…`` at a word boundary (a number is
    never cut); a too long first word at a token break, else inside it."""
    if len(text) <= width:
        return text
    if width < 1:
        return ""
    room = text[: width - 1]
    if text[width - 1].isspace():  # the cut falls between words
        return _ended(room.rstrip(), width)
    for breaks in (" \t\n", _TOKEN_BREAKS):
        at = max(room.rfind(mark) for mark in breaks)
        if at > 0 and room[:at].strip():
            return _ended(room[:at].rstrip(), width)
    return room + ELLIPSIS


def _ended(kept: str, width: int) -> str:
    """``kept`` and ``…``, spaced after a number (``2.31…`` reads as cut inside)."""
    while kept[-1:].isdigit():
        if len(kept) + 2 <= width:
            return f"{kept} {ELLIPSIS}"
        at = kept.rfind(" ")
        if at <= 0:
            break
        kept = kept[:at].rstrip()
    return kept + ELLIPSIS


def joined(head: str, parts: Sequence[str]) -> str:
    """``head`` and ``parts`` on one line, as :func:`wrap_parts` joins them."""
    return functools.reduce(_joined, parts, head)


def _joined(line: str, part: str) -> str:
    """``part`` after ``line``: a space after a colon, `` · `` after parts."""
    if not line.strip():
        return line + part
    return f"{line} {part}" if line.endswith(":") else f"{line}{SEPARATOR}{part}"


def leading_parts(parts: Sequence[str], width: int) -> str:
    """The leading ``parts`` that fit ``width`` together, joined by `` · `` (the first always)."""
    shown = ""
    for part in parts:
        joined = f"{shown}{SEPARATOR}{part}" if shown else part
        if shown and len(joined) > width:
            break
        shown = joined
    return shown


class StepReporter:
    """Inside a trial, called with the step count after each step: a ``ProgressEvent`` at most
    every ``every_s`` seconds; it never reads a device value, so it adds no synchronisation."""

    def __init__(
        self,
        emit: Callable[[Event], None],
        global_batch: int,
        total_steps: int,
        every_s: float = REPORT_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._emit = emit
        self._batch = global_batch
        self._total = total_steps
        self._every = every_s
        self._clock = clock
        self._last = clock()

    def __call__(self, step: int) -> None:
        now = self._clock()
        if now - self._last < self._every:
            return
        self._last = now
        self._emit(progress_event(step, self._total, self._batch))


def progress_event(step: int, total_steps: int, global_batch: int) -> ProgressEvent:
    """The event that says ``step`` of ``total_steps`` steps (of ``global_batch`` samples) ran."""
    return ProgressEvent(
        step=step,
        steps=total_steps,
        samples=step * global_batch,
        total_samples=total_steps * global_batch,
    )
