"""The study's pictures against the global batch, and the Pareto front: the ``*_figure``
functions only dress the numbers of :mod:`tuner.views.batch_data` as plotly figures."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from optuna.trial import FrozenTrial

from tuner.views.batch_data import (
    BatchCurves,
    LossBand,
    Point,
    batch_curves,
    complete_points,
    pareto_front,
    rule_offsets,
)
from tuner.views.runs import runs_label
from tuner.views.style import (
    AXIS,
    STYLE,
    halo,
    legend,
    ring,
    rule_color,
    star,
    title,
    tolerance_text,
)
from tuner.views.target_data import target_curves
from tuner.views.target_figures import target_figure

if TYPE_CHECKING:
    import plotly.graph_objects as go

OOM_TRACE = "out of memory"
"""Name of the trace that marks the global batch sizes that did not fit."""

_METRICS = {"throughput": "throughput (samples/s)", "final_loss": "final validation loss"}


def batch_figure(curves: BatchCurves, metric: str) -> go.Figure:
    """``metric`` against the global batch, one line per rule."""
    import plotly.graph_objects as go

    label = _METRICS[metric]
    sizes_shown = sorted(
        {p.global_batch_size for points in curves.by_rule.values() for p in points}
        | set(curves.oom)
    )
    offsets = rule_offsets(list(curves.by_rule), sizes_shown)

    def x(p: Point) -> float:
        return p.global_batch_size * offsets.get(p.curve, 1.0)

    def y(p: Point) -> float:
        return float(getattr(p, metric))

    figure = go.Figure()
    _behind(figure, curves, x, y)
    chosen = curves.recommended
    if chosen is not None:  # under its rule's marker, which stays visible in the star
        name = f"recommended (trial #{chosen.trial})"
        figure.add_trace(star(x(chosen), y(chosen), name, _hover(chosen)))
    for rule, points in curves.by_rule.items():
        figure.add_trace(_rule_trace(rule, points, metric, label, offsets[rule]))
    if curves.tied:
        figure.add_trace(ring(*_marks(curves.tied, x, y)))
    if curves.oom:
        values = [getattr(p, metric) for points in curves.by_rule.values() for p in points]
        floor = 0.0 if metric == "throughput" else min(values, default=0.0)
        _mark_oom(figure, curves.oom, floor=floor)
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
    yaxis: dict[str, Any] = {"title": label, **AXIS}
    key = _legend_title(offsets)
    if metric == "throughput":  # from 0: a bar's length is then the real share of the speed
        yaxis["range"] = [0.0, curves.throughput_top]
        key += _bars_note(curves)
    figure.update_layout(
        title=title(f"{label.capitalize()} vs global batch size"),
        xaxis={"title": "global batch size", "type": "log", "tickvals": sizes_shown, **AXIS},
        yaxis=yaxis,
        legend=legend(key),
        **STYLE,
    )
    return figure


def _marks(
    points: Sequence[Point], x: Callable[[Point], float], y: Callable[[Point], float]
) -> tuple[list[float], list[float], list[str]]:
    """The places and hover texts of ``points``."""
    return [x(p) for p in points], [y(p) for p in points], [_hover(p) for p in points]


def _behind(
    figure: go.Figure, curves: BatchCurves, x: Callable[[Point], float], y: Callable[[Point], float]
) -> None:
    """The candidates' halo, behind every point (added first)."""
    if curves.candidates:
        band = curves.loss_band
        tolerance = None if band is None else band.tolerance
        figure.add_trace(halo(*_marks(curves.candidates, x, y), tolerance))


def _bars_note(curves: BatchCurves) -> str:
    """What the throughput's error bars are, as a legend-title line (none without bars)."""
    sources = {p.error_source.split(" (")[0] for ps in curves.by_rule.values() for p in ps}
    kinds = []
    if "95 % CI" in sources:
        kinds.append("95 % CI over the runs")
    if "window spread of 1 run" in sources:
        kinds.append("window spread of a 1-run point")
    return f"<br><sub>error bars: {' or '.join(kinds)}</sub>" if kinds else ""


def _legend_title(offsets: dict[str, float]) -> str:
    """``learning-rate rule``, and how far the rules are drawn apart when they are."""
    spread = max(offsets.values(), default=1.0)
    if spread == 1.0:
        return "learning-rate rule"
    shift = f"±{(spread - 1) * 100:.0f} %"
    note = f"drawn side by side: x shifted up to {shift} so equal points show"
    return f"learning-rate rule<br><sub>{note}</sub>"


def _hover(p: Point) -> str:
    same = "" if p.same_as is None else f"<br>= trial #{p.same_as}: same training, one measurement"
    at = "" if p.precision is None else f", {p.precision}"
    runs = f"<br>{runs_label(p.run_trials)}" if p.run_trials else ""
    return (
        f"trial #{p.trial}: global batch {p.global_batch_size} ({p.per_replica_batch_size} per "
        f"replica), {p.lr_rule} rule, lr {p.learning_rate:.3g}{at}{same}{runs}"
    )


def _rule_trace(
    rule: str, points: list[Point], metric: str, label: str, offset: float
) -> go.Scatter:
    import plotly.graph_objects as go

    bars = metric == "throughput" and any(p.throughput_high is not None for p in points)
    texts = [_hover(p) + (_bar_hover(p) if metric == "throughput" else "") for p in points]
    return go.Scatter(
        x=[p.global_batch_size * offset for p in points],
        y=[getattr(p, metric) for p in points],
        mode="lines+markers",
        name=f"{rule} rule",
        line={"color": rule_color(rule)},
        marker={"size": 8},
        error_y=_error_y(points, rule) if bars else None,
        # The global batch as measured (x is shifted by the rule's offset).
        customdata=[[p.trial, p.global_batch_size] for p in points],
        text=texts,
        hovertemplate=f"%{{text}}<br>{label} %{{y:.4g}}<extra></extra>",
    )


def _error_y(points: list[Point], rule: str) -> dict[str, Any]:
    """Asymmetric throughput bars (an interval of the mean need not be centred on the median)."""
    return {
        "type": "data",
        "symmetric": False,
        "array": [max((p.throughput_high or p.throughput) - p.throughput, 0.0) for p in points],
        "arrayminus": [max(p.throughput - (p.throughput_low or p.throughput), 0.0) for p in points],
        "color": rule_color(rule),
        "thickness": 1.5,
        "width": 5,
    }


def _bar_hover(p: Point) -> str:
    """The error bar of a throughput point, said in words."""
    runs = "" if p.runs is None else f", {p.runs} run{'s' if p.runs != 1 else ''}"
    if p.throughput_low is None or p.throughput_high is None:
        return f"<br>no error bar{runs}"
    return f"<br>{p.error_source}: {p.throughput_low:,.0f}–{p.throughput_high:,.0f}{runs}"


def _shade_band(figure: go.Figure, band: LossBand, axis: str = "y") -> None:
    """The loss tolerance band, where the pick was chosen (``x``: on the Pareto plot)."""
    shade = figure.add_hrect if axis == "y" else figure.add_vrect
    ends = {f"{axis}0": band.best, f"{axis}1": band.limit}
    shade(
        **ends,
        fillcolor="#1b7f3b",
        opacity=0.12,
        line_width=0,
        layer="below",
        name=f"loss tolerance: within {tolerance_text(band.tolerance)} of the best loss",
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


def pareto_figure(
    points: Sequence[Point],
    recommended_trial: int | None = None,
    curves: BatchCurves | None = None,
) -> go.Figure:
    """Final loss vs throughput, the Pareto front ringed; with ``curves``, the loss tolerance band
    and its candidates: a point that beats the pick on both axes is seen to count equal to it."""
    import plotly.graph_objects as go

    loss, speed = attrgetter("final_loss"), attrgetter("throughput")
    figure = go.Figure()
    if curves is not None:
        _behind(figure, curves, loss, speed)
        if curves.loss_band is not None:
            _shade_band(figure, curves.loss_band, axis="x")
    chosen = [p for p in points if p.trial == recommended_trial]
    if chosen:  # under its rule's marker, as in the batch plots
        p = chosen[0]
        figure.add_trace(star(p.final_loss, p.throughput, "recommended", _hover(p)))
    for trace in _rule_markers(points):
        figure.add_trace(trace)
    figure.add_trace(_front_line(pareto_front(points)))
    if curves is not None and curves.tied:
        figure.add_trace(ring(*_marks(curves.tied, loss, speed)))
    picked = f": the pick is #{chosen[0].trial}" if chosen else ""
    figure.update_layout(
        title=title(f"Final loss vs throughput (Pareto front){picked}"),
        xaxis={"title": _METRICS["final_loss"], **AXIS},
        yaxis={"title": _METRICS["throughput"], **AXIS},
        legend=legend(_pareto_legend(curves)),
        **STYLE,
    )
    return figure


def _rule_markers(points: Sequence[Point]) -> list[go.Scatter]:
    """One marker trace per LR rule, loss against throughput."""
    import plotly.graph_objects as go

    traces = []
    for rule in sorted({p.curve for p in points}):
        mine = [p for p in points if p.curve == rule]
        traces.append(
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
    return traces


def _front_line(front: Sequence[Point]) -> go.Scatter:
    """The Pareto front, ringed and joined by a dotted line."""
    import plotly.graph_objects as go

    return go.Scatter(
        x=[p.final_loss for p in front],
        y=[p.throughput for p in front],
        mode="lines+markers",
        name=f"Pareto front ({len(front)} point{'s' if len(front) != 1 else ''})",
        line={"dash": "dot", "color": "#444"},
        marker={"symbol": "circle-open", "size": 16, "color": "#444"},
        hoverinfo="skip",
    )


def _pareto_legend(curves: BatchCurves | None) -> str:
    """Why the pick need not be on the front: losses within the tolerance count as equal."""
    if curves is None or curves.loss_band is None:
        return "learning-rate rule"
    within = tolerance_text(curves.loss_band.tolerance)
    return (
        f"learning-rate rule<br><sub>final losses within {within} of the best count as equal "
        "(green); the pick is chosen among them by throughput</sub>"
    )


def study_figures(
    trials: Sequence[FrozenTrial], rec: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The study's figures by id; ``rec`` adds the pick, the tied, the band, the prediction."""
    curves = batch_curves(trials, rec)
    figures = {
        "throughput-vs-batch": batch_figure(curves, "throughput"),
        "loss-vs-batch": batch_figure(curves, "final_loss"),
        "pareto": pareto_figure(complete_points(trials), (rec or {}).get("trial_number"), curves),
    }
    target = target_curves(trials, rec)
    if target is not None:
        figures[TARGET_PLOT] = target_figure(target)
    return figures


TARGET_PLOT = "time-to-target-vs-batch"
"""The id of the time-to-target figure (only in a study with a target loss)."""
