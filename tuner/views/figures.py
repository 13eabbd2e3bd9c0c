"""The study's pictures: throughput and final loss against the global batch, one line per
learning-rate rule with the out-of-memory sizes marked and the recommended trial starred (the loss
plot also shades the loss tolerance the recommendation chose within), and the Pareto front of
loss vs throughput.

The numbers come from :mod:`tuner.views.plot_data` (pure, re-exported here); the ``*_figure``
functions only dress them as plotly figures, which the dashboard stores and the HTML
report embeds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from optuna.trial import FrozenTrial

from tuner.views.plot_data import (
    BatchCurves,
    LossBand,
    Point,
    batch_curves,
    complete_points,
    pareto_front,
    rule_offsets,
)

if TYPE_CHECKING:
    import plotly.graph_objects as go

OOM_TRACE = "out of memory"
"""Name of the trace that marks the global batch sizes that did not fit."""

RULE_COLORS: dict[str, str] = {
    "none": "#636efa",
    "linear": "#ef553b",
    "sqrt": "#00cc96",
    "linear-warmup": "#ab63fa",
    "sqrt-adam": "#19d3f3",
}
"""One colour per rule of :data:`tuner.core.scaling.LR_RULES`, the same in every figure."""
_UNKNOWN_RULE_COLOR = "#888"  # a rule stored by another tuner version
# A compact white style set directly: a named template would be stored with every figure
# (optuna-dashboard keeps each figure in the study, in pieces).
_AXIS = {"gridcolor": "#e5e5e5", "zeroline": False, "linecolor": "#999", "showline": True}
_STYLE: dict[str, Any] = {
    "template": "none",
    "plot_bgcolor": "white",
    "paper_bgcolor": "white",
    "font": {"family": "Arial, sans-serif", "size": 12, "color": "#2a3f5f"},
    # Room at the top for the title below plotly's toolbar (the modebar, ~30 px at the top right).
    "margin": {"l": 70, "r": 30, "t": 76, "b": 60},
}
_TITLE_TOP_PX = 36
"""The title's top edge, in pixels below the figure's top: under the modebar, which it would
otherwise hide behind in optuna-dashboard's half-width cards."""
_METRICS = {"throughput": "throughput (samples/s)", "final_loss": "final validation loss"}


def rule_color(rule: str) -> str:
    """The colour of ``rule``'s traces."""
    return RULE_COLORS.get(rule, _UNKNOWN_RULE_COLOR)


def batch_figure(curves: BatchCurves, metric: str) -> go.Figure:
    """``metric`` (``throughput`` or ``final_loss``) against the global batch, one line per rule
    (rules drawn side by side, as the legend says); sizes that ran out of memory are marked with
    ✕ on the axis and shaded; the recommended point is starred, and on the loss plot the band of
    losses it was chosen among is shaded."""
    import plotly.graph_objects as go

    label = _METRICS[metric]
    sizes_shown = sorted(
        {p.global_batch_size for points in curves.by_rule.values() for p in points}
        | set(curves.oom)
    )
    offsets = rule_offsets(list(curves.by_rule), sizes_shown)
    figure = go.Figure()
    star = curves.recommended
    if star is not None:  # under its rule's marker, which stays visible in the star
        x = star.global_batch_size * offsets.get(star.lr_rule, 1.0)
        name = f"recommended (trial #{star.trial})"
        figure.add_trace(_star(star, x, getattr(star, metric), name))
    for rule, points in curves.by_rule.items():
        figure.add_trace(_rule_trace(rule, points, metric, label, offsets[rule]))
    if curves.oom:
        values = [getattr(p, metric) for points in curves.by_rule.values() for p in points]
        _mark_oom(figure, curves.oom, floor=min(values) if values else 0.0)
    if metric == "throughput" and curves.baseline_throughput:
        figure.add_hline(
            y=curves.baseline_throughput,
            line_dash="dash",
            line_color="gray",
            annotation_text="one device, base batch",
            annotation_position="bottom right",
        )
    if metric == "final_loss" and curves.loss_band is not None:
        _shade_band(figure, curves.loss_band)
    figure.update_layout(
        title=_title(f"{label.capitalize()} vs global batch size"),
        xaxis={"title": "global batch size", "type": "log", "tickvals": sizes_shown, **_AXIS},
        yaxis={"title": label, **_AXIS},
        legend={"title": {"text": _legend_title(offsets)}},
        **_STYLE,
    )
    return figure


def _title(text: str) -> dict[str, Any]:
    """A title at the top left, below the modebar (which sits at the top right)."""
    return {
        "text": text,
        "x": 0,
        "xref": "paper",
        "xanchor": "left",
        "y": 1,
        "yref": "container",
        "yanchor": "top",
        "pad": {"t": _TITLE_TOP_PX},
    }


def _legend_title(offsets: dict[str, float]) -> str:
    """``learning-rate rule``, and how far the rules are drawn apart when they are."""
    spread = max(offsets.values(), default=1.0)
    if spread == 1.0:
        return "learning-rate rule"
    shift = f"±{(spread - 1) * 100:.0f} %"
    note = f"drawn side by side: x shifted<br>up to {shift} so equal points show"
    return f"learning-rate rule<br><sub>{note}</sub>"


def _hover(p: Point) -> str:
    return (
        f"trial #{p.trial}: global batch {p.global_batch_size} ({p.per_replica_batch_size} per "
        f"replica), {p.lr_rule} rule, lr {p.learning_rate:.3g}"
    )


def _rule_trace(
    rule: str, points: list[Point], metric: str, label: str, offset: float
) -> go.Scatter:
    import plotly.graph_objects as go

    return go.Scatter(
        x=[p.global_batch_size * offset for p in points],
        y=[getattr(p, metric) for p in points],
        mode="lines+markers",
        name=f"{rule} rule",
        line={"color": rule_color(rule)},
        marker={"size": 8},
        # The global batch as measured (x is shifted by the rule's offset).
        customdata=[[p.trial, p.global_batch_size] for p in points],
        text=[_hover(p) for p in points],
        hovertemplate=f"%{{text}}<br>{label} %{{y:.4g}}<extra></extra>",
    )


def _star(point: Point, x: float, y: float, name: str = "recommended") -> go.Scatter:
    """The recommended point."""
    import plotly.graph_objects as go

    return go.Scatter(
        x=[x],
        y=[y],
        mode="markers",
        name=name,
        marker={"symbol": "star", "size": 20, "color": "#ffa600", "line": {"color": "#444"}},
        legendrank=1001,  # listed after the rules
        text=[_hover(point)],
        hovertemplate="%{text}<extra>recommended</extra>",
    )


def _shade_band(figure: go.Figure, band: LossBand) -> None:
    """The losses within the tolerance of the best one: where the recommendation chose."""
    figure.add_hrect(
        y0=band.best,
        y1=band.limit,
        fillcolor="#1b7f3b",
        opacity=0.15,
        line_width=0,
        layer="below",
        name=f"within {band.tolerance:.0%} of best loss",
        showlegend=True,
    )


def _mark_oom(figure: go.Figure, oom: dict[int, str], floor: float) -> None:
    """✕ at ``floor`` for each size that ran out of memory, and the range shaded."""
    import plotly.graph_objects as go

    sizes = list(oom)
    figure.add_trace(
        go.Scatter(
            x=sizes,
            y=[floor] * len(sizes),
            mode="markers+text",
            name=OOM_TRACE,
            marker={"symbol": "x", "size": 14, "color": "#b00020"},
            text=["OOM" if oom[s] == "oom" else "OOM (implied)" for s in sizes],
            textposition="top center",
            customdata=[oom[s] for s in sizes],
            hovertemplate="global batch %{x}: %{customdata}<extra></extra>",
        )
    )
    low, high = min(sizes) / 2**0.5, max(sizes) * 2**0.5
    figure.add_vrect(x0=low, x1=high, fillcolor="#b00020", opacity=0.08, line_width=0)
    figure.add_annotation(  # on a log axis an annotation's x is log10 of the value
        x=math.log10(low),
        xref="x",
        y=1,
        yref="y domain",
        text="does not fit",
        showarrow=False,
        xanchor="left",
        yanchor="top",
    )


def pareto_figure(points: Sequence[Point], recommended_trial: int | None = None) -> go.Figure:
    """Final loss vs throughput of every complete point, the Pareto front ringed and joined by a
    line (a front of one point is one ring) and the recommended trial starred."""
    import plotly.graph_objects as go

    front = pareto_front(points)
    figure = go.Figure()
    chosen = [p for p in points if p.trial == recommended_trial]
    if chosen:  # under its rule's marker, as in the batch plots
        figure.add_trace(_star(chosen[0], chosen[0].final_loss, chosen[0].throughput))
    for rule in sorted({p.lr_rule for p in points}):
        mine = [p for p in points if p.lr_rule == rule]
        figure.add_trace(
            go.Scatter(
                x=[p.final_loss for p in mine],
                y=[p.throughput for p in mine],
                mode="markers",
                name=f"{rule} rule",
                marker={"size": 9, "color": rule_color(rule)},
                text=[_hover(p) for p in mine],
                hovertemplate="%{text}<br>loss %{x:.4g}, %{y:,.0f} samples/s<extra></extra>",
            )
        )
    figure.add_trace(
        go.Scatter(
            x=[p.final_loss for p in front],
            y=[p.throughput for p in front],
            mode="lines+markers",
            name=f"Pareto front ({len(front)} point{'s' if len(front) != 1 else ''})",
            line={"dash": "dot", "color": "#444"},
            marker={"symbol": "circle-open", "size": 16, "color": "#444"},
            hoverinfo="skip",
        )
    )
    figure.update_layout(
        title=_title("Final loss vs throughput (Pareto front)"),
        xaxis={"title": _METRICS["final_loss"], **_AXIS},
        yaxis={"title": _METRICS["throughput"], **_AXIS},
        **_STYLE,
    )
    return figure


def study_figures(
    trials: Sequence[FrozenTrial], rec: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The study's figures by id: ``throughput-vs-batch``, ``loss-vs-batch``, ``pareto``;
    ``rec`` (the study's recommendation, ``None`` when nothing completed) adds the baseline, the
    recommended point and the loss tolerance band."""
    curves = batch_curves(trials, rec)
    return {
        "throughput-vs-batch": batch_figure(curves, "throughput"),
        "loss-vs-batch": batch_figure(curves, "final_loss"),
        "pareto": pareto_figure(complete_points(trials), (rec or {}).get("trial_number")),
    }
