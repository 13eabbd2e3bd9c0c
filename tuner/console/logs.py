"""The CLI's logging: what a command is doing is a ``tuner.*`` record at INFO; ``-q`` keeps
WARNING and above, ``-v`` adds DEBUG (Optuna's too). One handler writes each record literally on
stderr, above any live bar."""

from __future__ import annotations

import logging
import sys

from rich.console import Console
from rich.text import Text

from tuner.driver.observer import LOGGER

QUIET, NORMAL, VERBOSE = -1, 0, 1
"""Verbosity: ``-q``, neither, ``-v``."""

_LEVELS = {QUIET: logging.WARNING, NORMAL: logging.INFO, VERBOSE: logging.DEBUG}
_STYLES = {logging.WARNING: "yellow", logging.ERROR: "red", logging.CRITICAL: "bold red"}
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"


def logger(name: str) -> logging.Logger:
    """The logger ``tuner.<name>``."""
    return logging.getLogger(f"{LOGGER}.{name}")


def say_info(text: str) -> None:
    """Say what a command is doing: a record of ``tuner.cli`` at INFO (``-q`` hides it)."""
    logger("cli").info("%s", text)


def is_info_shown() -> bool:
    """Whether INFO lines are shown (not ``-q``)."""
    return logger("cli").isEnabledFor(logging.INFO)


class ConsoleHandler(logging.Handler):
    """Writes each record as one literal line on a rich console; timestamped when the console is
    not a terminal; records of other libraries (Optuna) name their logger."""

    def __init__(self, console: Console) -> None:
        super().__init__(logging.DEBUG)
        self.console = console

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
            if not record.name.startswith(LOGGER):
                message = f"[{record.name}] {message}"
            if not self.console.is_terminal:
                stamp = logging.Formatter(datefmt=TIME_FORMAT).formatTime(record, TIME_FORMAT)
                message = f"{stamp} {message}"
            style = _STYLES.get(record.levelno, "dim" if record.levelno < logging.INFO else "")
            # A terminal wraps a long line between words (its own wrap cuts one in two); a log
            # file keeps each record on one line for grep.
            wrap = not self.console.is_terminal
            self.console.print(Text(message, style=style), soft_wrap=wrap, highlight=False)
        except Exception:  # a logging failure must not end the search
            self.handleError(record)


def configure(verbosity: int, console: Console) -> None:
    """Send tuner's records (Optuna's too when :data:`VERBOSE`) to ``console``; idempotent."""
    root = logging.getLogger(LOGGER)
    optuna_logger = logging.getLogger("optuna")
    for owner in (root, optuna_logger):
        for handler in [h for h in owner.handlers if isinstance(h, ConsoleHandler)]:
            owner.removeHandler(handler)
    handler = ConsoleHandler(console)
    root.addHandler(handler)
    root.setLevel(_LEVELS[verbosity])
    root.propagate = False
    if verbosity == VERBOSE:  # Optuna's records, DEBUG and up, through ours, not also its own
        import optuna

        optuna.logging.set_verbosity(optuna.logging.DEBUG)
        optuna.logging.disable_default_handler()
        optuna_logger.addHandler(handler)
    elif "optuna" in sys.modules:  # untouched, it needs nothing (and importing it costs time)
        import optuna  # its own handler back, if a verbose run in this process took it away

        optuna.logging.enable_default_handler()
