"""The range test's picture: each step's loss and the smoothed loss against the rate."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuner.core.errors import ConfigError
from tuner.files import atomic_write_text
from tuner.views.style import AXIS, STYLE, legend, star, title

if TYPE_CHECKING:
    import plotly.graph_objects as go

RAW_COLOR = "#9aa5c4"
SMOOTH_COLOR = "#636efa"
DIVERGED_COLOR = "#ef553b"


def lr_find_figure(report: dict[str, Any]) -> go.Figure:
    """The figure of a ``tuner lr-find`` report (:func:`tuner.driver.lr_find.report`)."""
    import plotly.graph_objects as go

    rates = report["learning_rates"]
    figure = go.Figure()
    skip = int(report["skipped_steps"])
    if skip and len(rates) > skip:
        figure.add_vrect(
            x0=rates[0], x1=rates[skip], fillcolor="#bbbbbb", opacity=0.18, line_width=0
        )
        # Placed by hand: plotly puts a shape's own annotation at the wrong x on a log axis.
        figure.add_annotation(
            x=math.log10(rates[0]),
            y=0,
            yref="paper",
            text=f"first {skip} steps left out",
            showarrow=False,
            xanchor="left",
            yanchor="bottom",
            font={"color": "#666"},
        )
    figure.add_trace(_line(rates, report["losses"], "loss of each step", RAW_COLOR, "markers"))
    smoothed = f"smoothed (EMA, β = {report['ema_beta']:.3g}, bias-corrected)"
    figure.add_trace(_line(rates, report["smoothed"], smoothed, SMOOTH_COLOR))
    if report["diverged_lr"] is not None:
        figure.add_vline(x=report["diverged_lr"], line={"color": DIVERGED_COLOR, "dash": "dot"})
        figure.add_annotation(
            x=math.log10(report["diverged_lr"]),
            y=1,
            yref="paper",
            text="diverged",
            showarrow=False,
            font={"color": DIVERGED_COLOR},
            xanchor="right",
        )
    suggestion = report["suggestion"]
    if suggestion is not None:
        step = rates.index(suggestion)
        text = f"suggested lr {suggestion:.3g}: the steepest fall of the smoothed loss"
        figure.add_trace(
            star(suggestion, report["smoothed"][step], f"suggested {suggestion:.2g}", text)
        )
    figure.update_layout(
        title=title(
            f"Learning-rate range test: global batch {report['global_batch_size']} on "
            f"{report['num_replicas']} replicas, {report['steps_run']} of "
            f"{report['planned_steps']} steps"
        ),
        xaxis={"title": "learning rate", "type": "log", "exponentformat": "power", **AXIS},
        yaxis={"title": "training loss", "range": _y_range(report), **AXIS},
        legend=legend(report.get("reason") or ""),
        **STYLE,
    )
    return figure


def write_figure(figure: go.Figure, path: Path) -> None:
    """``figure`` as a page (``.html``) or a picture (``.png``: Kaleido needs Chrome)."""
    if path.suffix.lower() == ".html":
        try:
            atomic_write_text(path, figure.to_html(include_plotlyjs="cdn", full_html=True))
        except OSError as exc:
            raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None
        return
    import plotly.io as pio

    pio.write_image(figure, str(path), width=1000, height=560)


def _line(
    xs: Sequence[float], ys: Sequence[float | None], name: str, color: str, mode: str = "lines"
) -> go.Scatter:
    import plotly.graph_objects as go

    return go.Scatter(
        x=list(xs),
        y=list(ys),
        mode=mode,
        name=name,
        line={"color": color, "width": 2.5},
        marker={"color": color, "size": 5},
        hovertemplate="lr %{x:.3g}<br>loss %{y:.4g}<extra></extra>",
    )


def _y_range(report: dict[str, Any]) -> list[float] | None:
    """From below the lowest smoothed loss to a little above the first: the blow-up left out."""
    smoothed = [v for v in report["smoothed"] if v is not None]
    losses = [v for v in report["losses"] if v is not None]
    if not smoothed or not losses:
        return None
    low, high = min(min(smoothed), min(losses)), max(smoothed[: max(1, len(smoothed) // 2)])
    top = max(high, smoothed[0]) * 1.5
    span = top - low
    return [low - 0.05 * span, top]
