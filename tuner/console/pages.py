"""Where tuner writes for people: stdout for results, stderr for the rest, notices, warnings."""

from __future__ import annotations

import os
from typing import Any

from rich.console import Console, ConsoleDimensions
from rich.markup import escape

from tuner.console.logs import say_info

PIPED_WIDTH = 160
"""The page width of piped output (a file, a CI log) when ``COLUMNS`` does not say."""


class PageConsole(Console):
    """A rich console whose width is decided at each print: ``COLUMNS``, else the terminal's,
    else :data:`PIPED_WIDTH` (rich's 80 would make a log narrower than the screen)."""

    def __init__(self, **options: Any) -> None:
        # Rich reads COLUMNS itself when built (and crashes on one like "²"); this console
        # reads it at each print instead, so rich is given an environment without it.
        environ = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
        super().__init__(_environ=environ, **options)

    @property
    def size(self) -> ConsoleDimensions:
        height = super().size.height
        columns = os.environ.get("COLUMNS", "")
        if columns.isdecimal() and int(columns) > 0:
            return ConsoleDimensions(int(columns), height)
        if self.is_terminal:
            return super().size
        return ConsoleDimensions(PIPED_WIDTH, height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:  # settable as in rich; unused by tuner
        self._width, self._height = new_size


out = PageConsole()
err = PageConsole(stderr=True)


class LineView:
    """A command drawn as lines on stderr: its notices, and its notes as info lines (not ``-q``)."""

    def notice(self, message: str) -> None:
        notice(message)

    def note(self, message: str) -> None:
        say_info(message)


def notice(message: str) -> None:
    """A line the user should read even with ``-q``, in yellow, printed literally."""
    err.print(f"[yellow]{escape(message)}[/]", highlight=False)


def warn(message: str) -> None:
    """``warning: MESSAGE`` on stderr, the message printed literally (it quotes paths and URLs)."""
    err.print(f"[yellow]warning:[/] {escape(message)}", highlight=False, soft_wrap=True)
