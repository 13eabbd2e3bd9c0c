"""The ``tuner`` command: a Typer app, one small module per command group, shared options, the
one error table and terminal display.

Commands parse their flags, make one library call and print. Nothing below imports the CLI.
"""

from __future__ import annotations


def main() -> None:
    """Entry point of the ``tuner`` command."""
    from tuner.cli.app import main as run

    run()
