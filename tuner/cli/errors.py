"""The CLI's one error table: every command runs inside :func:`guard`, which turns tuner's errors
into one clean line on stderr and an exit code (tracebacks only with ``--debug``), Ctrl-C into
exit code 130 and SIGTERM into 143."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Iterator
from typing import TypeVar

import typer
from rich.markup import escape

from tuner.cli.options import err
from tuner.core.errors import ConfigError, NoCompleteTrialError, TunerError

T = TypeVar("T")
state = {"debug": False}

# The one error table: exception type -> exit code (first match wins).
_EXIT_CODES: list[tuple[type[BaseException], int]] = [
    (ConfigError, 2),
    (NoCompleteTrialError, 1),
    (TunerError, 1),
]


def exit_code(exc: BaseException) -> int:
    """The exit code of an error that ended a command."""
    for kind, code in _EXIT_CODES:
        if isinstance(exc, kind):
            return code
    return 1


class Terminated(KeyboardInterrupt):
    """SIGTERM, delivered like Ctrl-C so the same clean-up runs (exit code 143)."""


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated`."""

    def raise_terminated(signum: int, frame: object) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def guard(call: Callable[[], T]) -> T:
    """Run ``call``; turn tuner's errors into one line on stderr and an exit code."""
    try:
        return call()
    except KeyboardInterrupt as exc:
        terminated = isinstance(exc, Terminated)
        err.print(f"[red]{'terminated' if terminated else 'interrupted'}[/]")
        raise typer.Exit(143 if terminated else 130) from None
    except Exception as exc:
        if state["debug"]:
            raise
        if isinstance(exc, TunerError):
            message = str(exc)
        else:
            message = f"internal error: {type(exc).__name__}: {exc} (run with --debug for details)"
        # The message quotes the user's own text (paths, names, TOML like [search]): literal.
        err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
        raise typer.Exit(exit_code(exc)) from None
