"""The study's pictures: throughput and final loss against the global batch, one line per
learning-rate rule with the out-of-memory sizes marked, and the Pareto front of loss vs
throughput.

:func:`batch_curves` and :func:`pareto_front` are pure (trials in, numbers out); the ``*_figure``
functions only dress those numbers as plotly figures, which the dashboard stores and the HTML
report embeds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from optuna.trial import FrozenTrial

from tuner.core.recommend import INFEASIBLE, is_complete, status_of, unique_trials

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
    "margin": {"l": 70, "r": 30, "t": 60, "b": 60},
}
_METRICS = {"throughput": "throughput (samples/s)", "final_loss": "final validation loss"}


@dataclass(frozen=True)
class Point:
    """One COMPLETE grid point."""

    trial: int
    global_batch_size: int
    per_replica_batch_size: int
    lr_rule: str
    learning_rate: float
    throughput: float
    final_loss: float


@dataclass(frozen=True)
class BatchCurves:
    """What the batch-size plots show: each rule's points by batch, and the sizes that ran out
    of memory (``oom`` measured, ``oom-implied`` known from a smaller size)."""

    by_rule: dict[str, list[Point]]
    oom: dict[int, str]
    baseline_throughput: float | None = None


def complete_points(trials: Iterable[FrozenTrial]) -> list[Point]:
    """The COMPLETE grid points with finite values, one per grid point, by batch then rule."""
    points = []
    for trial in unique_trials(trials):
        if not is_complete(trial):
            continue
        loss, throughput = trial.values
        attrs = trial.user_attrs
        points.append(
            Point(
                trial=trial.number,
                global_batch_size=int(trial.params["global_batch_size"]),
                per_replica_batch_size=int(attrs.get("per_replica_batch_size", 0)),
                lr_rule=str(trial.params["lr_rule"]),
                learning_rate=float(attrs.get("learning_rate", math.nan)),
                throughput=float(throughput),
                final_loss=float(loss),
            )
        )
    return sorted(points, key=lambda p: (p.global_batch_size, p.lr_rule))


def batch_curves(
    trials: Sequence[FrozenTrial], baseline_throughput: float | None = None
) -> BatchCurves:
    """Group the complete points by rule (of several model configurations at one batch and rule,
    the one with the lowest loss) and collect the out-of-memory sizes."""
    best: dict[tuple[str, int], Point] = {}  # several model configurations: the best loss
    for point in complete_points(trials):
        key = (point.lr_rule, point.global_batch_size)
        if key not in best or point.final_loss < best[key].final_loss:
            best[key] = point
    by_rule: dict[str, list[Point]] = {}
    for (rule, _), point in sorted(best.items()):
        by_rule.setdefault(rule, []).append(point)
    oom: dict[int, str] = {}
    for trial in unique_trials(trials):
        status = status_of(trial)
        if status in INFEASIBLE:
            size = int(trial.params["global_batch_size"])
            if oom.get(size) != "oom":  # a measured OOM says more than an implied one
                oom[size] = status
    return BatchCurves(
        dict(sorted(by_rule.items())), dict(sorted(oom.items())), baseline_throughput
    )


def pareto_front(points: Iterable[Point]) -> list[Point]:
    """Points no other point beats on both loss (lower) and throughput (higher), by loss."""
    candidates = list(points)
    front = [
        p
        for p in candidates
        if not any(
            q.final_loss <= p.final_loss
            and q.throughput >= p.throughput
            and (q.final_loss < p.final_loss or q.throughput > p.throughput)
            for q in candidates
        )
    ]
    return sorted(front, key=lambda p: (p.final_loss, -p.throughput))


def rule_color(rule: str) -> str:
    """The colour of ``rule``'s traces."""
    return RULE_COLORS.get(rule, _UNKNOWN_RULE_COLOR)


def batch_figure(curves: BatchCurves, metric: str) -> go.Figure:
    """``metric`` (``throughput`` or ``final_loss``) against the global batch, one line per rule;
    sizes that ran out of memory are marked with ✕ on the axis and shaded."""
    import plotly.graph_objects as go

    label = _METRICS[metric]
    figure = go.Figure()
    for rule, points in curves.by_rule.items():
        figure.add_trace(_rule_trace(rule, points, metric, label))
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
    sizes_shown = sorted(
        {p.global_batch_size for points in curves.by_rule.values() for p in points}
        | set(curves.oom)
    )
    figure.update_layout(
        title=f"{label.capitalize()} vs global batch size",
        xaxis={"title": "global batch size", "type": "log", "tickvals": sizes_shown, **_AXIS},
        yaxis={"title": label, **_AXIS},
        legend={"title": "learning-rate rule"},
        **_STYLE,
    )
    return figure


def _rule_trace(rule: str, points: list[Point], metric: str, label: str) -> go.Scatter:
    import plotly.graph_objects as go

    return go.Scatter(
        x=[p.global_batch_size for p in points],
        y=[getattr(p, metric) for p in points],
        mode="lines+markers",
        name=f"{rule} rule",
        line={"color": rule_color(rule)},
        customdata=[[p.trial, p.per_replica_batch_size, p.learning_rate] for p in points],
        hovertemplate=(
            f"{rule} rule, global batch %{{x}} (%{{customdata[1]}} per replica)<br>"
            f"lr %{{customdata[2]:.3g}}: {label} %{{y:.4g}}<br>trial #%{{customdata[0]}}"
            "<extra></extra>"
        ),
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
    """Final loss vs throughput of every complete point, the Pareto front joined by a line and
    the recommended trial starred."""
    import plotly.graph_objects as go

    def hover(p: Point) -> str:
        return (
            f"trial #{p.trial}: global batch {p.global_batch_size}, {p.lr_rule} rule, "
            f"lr {p.learning_rate:.3g}"
        )

    front = pareto_front(points)
    figure = go.Figure()
    for rule in sorted({p.lr_rule for p in points}):
        mine = [p for p in points if p.lr_rule == rule]
        figure.add_trace(
            go.Scatter(
                x=[p.final_loss for p in mine],
                y=[p.throughput for p in mine],
                mode="markers",
                name=f"{rule} rule",
                marker={"size": 9, "color": rule_color(rule)},
                text=[hover(p) for p in mine],
                hovertemplate="%{text}<br>loss %{x:.4g}, %{y:,.0f} samples/s<extra></extra>",
            )
        )
    figure.add_trace(
        go.Scatter(
            x=[p.final_loss for p in front],
            y=[p.throughput for p in front],
            mode="lines",
            name="Pareto front",
            line={"dash": "dot", "color": "#444"},
            hoverinfo="skip",
        )
    )
    chosen = [p for p in points if p.trial == recommended_trial]
    if chosen:
        figure.add_trace(
            go.Scatter(
                x=[chosen[0].final_loss],
                y=[chosen[0].throughput],
                mode="markers",
                name="recommended",
                marker={"symbol": "star", "size": 18, "color": "#ffa600"},
                text=[hover(chosen[0])],
                hovertemplate="%{text}<extra>recommended</extra>",
            )
        )
    figure.update_layout(
        title="Final loss vs throughput (Pareto front)",
        xaxis={"title": _METRICS["final_loss"], **_AXIS},
        yaxis={"title": _METRICS["throughput"], **_AXIS},
        **_STYLE,
    )
    return figure


def study_figures(
    trials: Sequence[FrozenTrial],
    baseline_throughput: float | None = None,
    recommended_trial: int | None = None,
) -> dict[str, Any]:
    """The study's figures by id: ``throughput-vs-batch``, ``loss-vs-batch``, ``pareto``."""
    curves = batch_curves(trials, baseline_throughput)
    return {
        "throughput-vs-batch": batch_figure(curves, "throughput"),
        "loss-vs-batch": batch_figure(curves, "final_loss"),
        "pareto": pareto_figure(complete_points(trials), recommended_trial),
    }
