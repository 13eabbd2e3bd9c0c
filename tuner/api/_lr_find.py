"""``tuner.lr_find(model=..., data=..., **options)``: ``tuner lr-find`` from Python."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuner.api._functions import Shipment
from tuner.api._search import Function, _tables, check_known, checked, ship_workload
from tuner.core.options import naming

if TYPE_CHECKING:
    import plotly.graph_objects as go


@dataclasses.dataclass(frozen=True)
class LrFindResult:
    """What a range test found: :attr:`suggestion` (``None`` with :attr:`reason` when the loss
    never fell steadily) and the whole :attr:`report` (``tuner lr-find --output``'s JSON)."""

    report: dict[str, Any]

    @property
    def suggestion(self) -> float | None:
        """The suggested ``base_lr``."""
        return self.report["suggestion"]

    @property
    def reason(self) -> str | None:
        """Why there is no suggestion (``None`` when there is one)."""
        return self.report["reason"]

    @property
    def spec_line(self) -> str | None:
        """The line to paste under ``[search]`` of a spec."""
        return self.report["spec_line"]

    def figure(self) -> go.Figure:
        """The loss against the rate, the suggestion starred (a plotly figure)."""
        from tuner.views.lr_find_figure import lr_find_figure

        return lr_find_figure(self.report)


def lr_find(
    *,
    model: Function | Any | None = None,
    data: Function | None = None,
    dataset: Function | None = None,
    loss: Any = None,
    optimizer: Any = None,
    spec: str | Path | None = None,
    **options: Any,
) -> LrFindResult:
    """Run the learning-rate range test at the base batch on your own functions: ``model``,
    ``data``, ``dataset``, ``loss``, ``optimizer`` and ``spec`` are :func:`tuner.search`'s, every
    other option ``tuner lr-find``'s flag with underscores (``min_lr=1e-6``, ``plot="lr.html"``).
    Raises :class:`~tuner.core.errors.ConfigError` for bad input and
    :class:`~tuner.core.errors.TunerError` when the run fails, with the CLI's lines."""
    from tuner.driver.children import owned_folder
    from tuner.driver.lr_find import LrFindOptions, find_lr

    check_known("tuner.lr_find", options, LrFindOptions, {"spec"})
    with naming("lr-find", keywords=True):
        options = {key: checked("lr-find", key, value) for key, value in options.items()}
    tables = _tables(spec, loss=loss, optimizer=optimizer)
    tables["study"].setdefault("name", "lr-find")

    # Owned like a trial folder: swept by the next run if this process is killed in the block.
    with owned_folder("lr-find") as folder:
        shipment = Shipment(folder)
        ship_workload(shipment, tables["workload"], "tuner.lr_find", model, data, dataset)
        lr_options = LrFindOptions(spec=tables, **options)
        shipment.write()
        with shipment.importable(), naming("lr-find", keywords=True):
            report = find_lr(lr_options)
    result = LrFindResult(report)
    if lr_options.output is not None:
        from tuner.files import atomic_write_text

        atomic_write_text(lr_options.output, json.dumps(report, indent=2) + "\n")
    if lr_options.plot is not None:
        from tuner.views.lr_find_figure import write_figure

        write_figure(result.figure(), lr_options.plot)
    return result
