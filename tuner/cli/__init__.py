"""The ``tuner`` command: commands parse their flags, make one library call and print."""

from __future__ import annotations


def main() -> None:
    """Entry point of the ``tuner`` command."""
    from tuner.cli.app import main as run

    run()
