"""The fixed choices of the browsing commands' flags, as enums, so that ``--help`` lists them and
click refuses any other value with the list (the run commands' choices are the options table's:
:mod:`tuner.core.options`). Each mirrors a tuple of the core, which stays the one source of truth
(``tests/cli/test_conventions.py`` checks that they agree)."""

from __future__ import annotations

from enum import StrEnum


class Policy(StrEnum):
    """``--policy``: how the recommendation is chosen within the loss tolerance."""

    loss_then_throughput = "loss-then-throughput"
    goodput = "goodput"
    time_to_target = "time-to-target"


class ReportFormat(StrEnum):
    """``tuner report --format``."""

    html = "html"
    png = "png"


class ShowFormat(StrEnum):
    """``tuner show --format``: a table for people, JSON or CSV for programs."""

    table = "table"
    json = "json"
    csv = "csv"


def value(choice: StrEnum | None) -> str | None:
    """The plain string of a choice (``None`` stays ``None``: the spec's value is kept)."""
    return None if choice is None else str(choice.value)
