"""The fixed choices of the CLI's flags, as enums, so that ``--help`` lists them and click
refuses any other value with the list. Each mirrors a tuple of the core, which stays the one
source of truth (``tests/cli/test_conventions.py`` checks that they agree)."""

from __future__ import annotations

from enum import StrEnum


class Loop(StrEnum):
    """``--loop``: Keras ``fit``, or a ``custom`` loop around ``strategy.run``."""

    fit = "fit"
    custom = "custom"


class Backend(StrEnum):
    """``--backend``: the Keras 3 backend trials train on."""

    tensorflow = "tensorflow"
    jax = "jax"


class UpdateOn(StrEnum):
    """``--update-on``: where the weights are updated."""

    replicas = "replicas"
    cpu = "cpu"


class LrRule(StrEnum):
    """``--lr-rule``: how the learning rate follows the global batch."""

    none = "none"
    linear = "linear"
    sqrt = "sqrt"
    linear_warmup = "linear-warmup"
    sqrt_adam = "sqrt-adam"


class Policy(StrEnum):
    """``--policy``: how the recommendation is chosen within the loss tolerance."""

    loss_then_throughput = "loss-then-throughput"
    goodput = "goodput"
    time_to_target = "time-to-target"


class ModelHyperparameters(StrEnum):
    """``--model-hyperparameters``: a hypermodel's defaults, or searched jointly."""

    defaults = "defaults"
    search = "search"


class LossReduction(StrEnum):
    """``--loss-reduction`` of validate's custom loop."""

    global_ = "global"
    replica_mean = "replica-mean"


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
