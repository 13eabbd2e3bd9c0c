"""The ``tuner`` Typer app: the global flags and every command, in ``tuner --help``'s order."""

from __future__ import annotations

from typing import Annotated

import typer

from tuner.cli import browse
from tuner.cli.errors import state
from tuner.cli.lr_find import lr_find
from tuner.cli.search import probe_cmd, search, validate
from tuner.console import logs
from tuner.console.pages import err

app = typer.Typer(
    name="tuner",
    help="Measure which global batch size and learning-rate rule to use with MirroredStrategy.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # click's plain help: it reads in 80 columns (rich's boxes cut long flags and squeeze the
    # help text), lists each enum's choices and prints a bad flag as one short error.
    rich_markup_mode=None,
)


def _print_version(value: bool) -> None:
    if value:
        from tuner import __version__
        from tuner.extras import DISTRIBUTION

        print(f"tuner {__version__} ({DISTRIBUTION} on PyPI)")
        raise typer.Exit()


@app.callback()
def _main(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
    quiet: Annotated[
        bool, typer.Option("-q", "--quiet", help="Print only errors and the final result.")
    ] = False,
    verbose: Annotated[
        bool,
        typer.Option("-v", "--verbose", help="Print debug lines, Optuna's own log included."),
    ] = False,
) -> None:
    state["debug"] = debug
    if quiet and verbose:
        raise typer.BadParameter("-q/--quiet and -v/--verbose exclude each other")
    logs.configure(logs.VERBOSE if verbose else logs.QUIET if quiet else logs.NORMAL, err)


app.command()(search)
app.command()(validate)
app.command("lr-find")(lr_find)
app.command("probe")(probe_cmd)
app.command("export")(browse.export_cmd)
app.command()(browse.show)
app.command()(browse.dashboard)
app.command()(browse.report)


def main() -> None:
    """Console-script entry point (``python -m tuner`` too, named ``tuner`` in its usage)."""
    app(prog_name="tuner")
