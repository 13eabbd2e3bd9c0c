"""The CLI's one error table: every command runs inside :func:`guard` (an error: one line and its
exit code; Ctrl-C 130, SIGTERM 143)."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import TypeVar

import typer
from rich.markup import escape

from tuner.console.pages import err
from tuner.console.signals import Terminated
from tuner.core.errors import ConfigError, NoCompleteTrialError, TunerError

T = TypeVar("T")
state = {"debug": False}

# The one error table: exception type -> exit code (first match wins; anything else: 1).
_EXIT_CODES = [(ConfigError, 2), (NoCompleteTrialError, 1), (TunerError, 1)]


def exit_code(exc: BaseException) -> int:
    """The exit code of an error that ended a command."""
    return next((code for kind, code in _EXIT_CODES if isinstance(exc, kind)), 1)


def guard(call: Callable[[], T]) -> T:
    """Run ``call``; turn tuner's errors into one line on stderr and an exit code."""
    try:
        return call()
    except KeyboardInterrupt as exc:
        terminated = isinstance(exc, Terminated)
        err.print(f"[red]{'terminated' if terminated else 'interrupted'}[/]")
        raise typer.Exit(143 if terminated else 130) from None
    except Exception as exc:
        if state["debug"]:  # the traceback asked for, and still the error's own exit code
            traceback.print_exc()
        if isinstance(exc, TunerError):
            message = str(exc)
        else:
            message = f"internal error: {type(exc).__name__}: {exc} (run with --debug for details)"
        # The message quotes the user's own text (paths, names, TOML like [search]): literal.
        err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
        raise typer.Exit(exit_code(exc)) from None
