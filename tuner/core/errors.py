"""The exceptions tuner raises on purpose.

Every error a user can cause or meet is a :class:`TunerError`; the CLI maps each subclass to an
exit code in one table (``tuner.cli.errors``). Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class TunerError(Exception):
    """Base class of tuner's own errors; the message is one line meant for the user."""


class ConfigError(TunerError):
    """Bad input: a flag, a spec file, a storage URL, a device that is not there (exit code 2)."""


class StudyNotFoundError(ConfigError):
    """The storage holds no study of that name."""


class NoCompleteTrialError(TunerError):
    """A study has no COMPLETE trial, so there is nothing to recommend (exit code 1)."""


class AllDivergedError(NoCompleteTrialError):
    """A search ended with every trial that trained diverged (loss NaN or inf): nothing to
    recommend, and the message names the likeliest causes (exit code 1)."""


class WorkloadError(ConfigError):
    """A workload's model or data cannot be loaded, built or fitted together (exit code 2)."""


class MissingExtraError(TunerError):
    """A command needs an optional part of tuner that is not installed, such as
    ``mirrortuner[dashboard]``; the message says what to install (exit code 1)."""


class PngExportError(TunerError):
    """The plots could not be rendered to PNG (no browser for Kaleido); the HTML was written
    (exit code 1)."""


class TrialFailed(Exception):
    """Raised from the objective to end a trial FAIL; caught by ``study.optimize``.

    Not a :class:`TunerError`: it never reaches the user, its trial's attributes say why."""
