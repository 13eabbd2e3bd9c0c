"""The ``tuner`` Typer app: the global ``--debug`` flag and every command, in the order of
``tuner --help``. The commands live in one module per group: :mod:`tuner.cli.search` (search,
probe), :mod:`tuner.cli.validate` and :mod:`tuner.cli.browse` (export, show, dashboard, report).
"""

from __future__ import annotations

from typing import Annotated

import typer

from tuner.cli import browse
from tuner.cli.errors import state
from tuner.cli.search import probe_cmd, search
from tuner.cli.validate import validate

app = typer.Typer(
    name="tuner",
    help="Measure which global batch size and learning-rate rule to use with MirroredStrategy.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _main(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
) -> None:
    state["debug"] = debug


app.command()(search)
app.command()(validate)
app.command("probe")(probe_cmd)
app.command("export")(browse.export_cmd)
app.command()(browse.show)
app.command()(browse.dashboard)
app.command()(browse.report)


def main() -> None:
    """Console-script entry point."""
    app()
