"""The exceptions tuner raises on purpose.

Every error a user can cause or meet is a :class:`TunerError`; the CLI maps each subclass to an
exit code in one table (``tuner.cli.errors``). Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import re


class TunerError(Exception):
    """Base class of tuner's own errors; the message is one line meant for the user."""


class ConfigError(TunerError):
    """Bad input: a flag, a spec file, a storage URL, a device that is not there (exit code 2)."""


class StudyNotFoundError(ConfigError):
    """The storage holds no study of that name."""


class NoCompleteTrialError(TunerError):
    """A study has no COMPLETE trial, so there is nothing to recommend (exit code 1)."""


class AllDivergedError(NoCompleteTrialError):
    """Every trial that trained diverged; the message names the likeliest causes (exit 1)."""


class WorkloadError(ConfigError):
    """A workload's model or data cannot be loaded, built or fitted together (exit code 2)."""


class MissingExtraError(TunerError):
    """An optional part of tuner is not installed; the message says what to install (exit 1)."""


class PngExportError(TunerError):
    """The plots could not be rendered to PNG; the HTML was written (exit code 1)."""


class TrialFailed(Exception):
    """Ends a trial FAIL from the objective; never shown: its attributes say why."""


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NAME_PREFIXES = re.compile(r"^(?:(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Exit|Warning): )+")
"""Exception names (``ValueError: ``, dotted ones too) at the start of a line, once or more."""

_KERAS_FRAME = ("Exception encountered when calling", "Arguments received by", "•")
"""Keras's lines around an error raised in a layer's call: where, and with what arguments."""


def error_line(exc: BaseException, limit: int = 300) -> str:
    """The one line an error shows a user: its type's name once (graph tracing repeats it inside
    the message), then at most ``limit`` characters of the line that says what went wrong."""
    from tuner.core.oom import summary

    text = _ANSI.sub("", str(exc))
    cut = text.find("Arguments received by")
    lines = [
        line
        for line in (text[:cut] if cut >= 0 else text).splitlines()
        if not line.strip().startswith(_KERAS_FRAME)
    ]
    line = summary("\n".join(lines)) if any(part.strip() for part in lines) else ""
    line = _NAME_PREFIXES.sub("", line, count=1)
    return f"{type(exc).__name__}: {line[:limit]}" if line else type(exc).__name__


class RepeatedFailureError(TunerError):
    """Two grid points failed alike, not by their configuration: the search stopped (exit 1)."""
