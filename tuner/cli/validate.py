"""``tuner validate``: prove that the multi-replica run trains like one device."""

from __future__ import annotations

from typing import Any

from tuner.cli.errors import guard
from tuner.cli.options import parsed, takes, write_json
from tuner.console.logs import say_info
from tuner.console.pages import LineView, out
from tuner.core.errors import TunerError
from tuner.driver.options import ValidateOptions


@takes("validate")
def validate(**flags: Any) -> None:
    """Prove the multi-replica run is right: loss parity, final weights, weight sync, device use,
    learning rate."""
    guard(lambda: _validate(parsed(ValidateOptions, flags)))


def _validate(options: ValidateOptions) -> None:
    """Run both children; print the checks, write the report when asked; fail when one fails."""
    from tuner.console import display
    from tuner.driver.search import validate as run

    report = run(options, LineView())
    display.print_validation(out, report)
    if options.output is not None:
        write_json(options.output, report)
        say_info(f"report written to {options.output}")
    if not report["passed"]:
        raise TunerError("validation failed: see the checks above")
