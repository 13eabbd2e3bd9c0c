"""The time-to-target picture, as a plotly figure."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tuner.views.batch_data import rule_offsets
from tuner.views.style import AXIS, STYLE, legend, ring, rule_color, star, title
from tuner.views.target_data import PredictedPoint, TargetCurves, TargetPoint

if TYPE_CHECKING:
    import plotly.graph_objects as go

PREDICTED_TRACE = "predicted (McCandlish et al. 2018)"
"""Name of the trace of the model's predicted time to target."""
MISSED_TRACE = "target not reached"
"""Name of the trace that marks the sizes whose run ended above the target."""


def target_figure(curves: TargetCurves) -> go.Figure:
    """Training time to the target loss against the global batch, one line per rule, the misses
    marked ✕ at 0, the predicted curve dashed."""
    import plotly.graph_objects as go

    sizes = sorted(
        {p.global_batch_size for ps in curves.by_rule.values() for p in ps}
        | {b for missed in curves.missed.values() for b in missed}
        | {p.global_batch_size for p in curves.predicted}
    )
    offsets = rule_offsets(list(curves.by_rule), sizes)
    figure = go.Figure()
    chosen = curves.recommended
    if chosen is not None:
        x = chosen.global_batch_size * offsets.get(chosen.lr_rule, 1.0)
        name = f"recommended (trial #{chosen.trial})"
        figure.add_trace(star(x, chosen.seconds, name, _hover(chosen)))
    for rule, points in curves.by_rule.items():
        figure.add_trace(_rule_trace(rule, points, offsets[rule]))
    if curves.tied:
        xs = [p.global_batch_size * offsets.get(p.lr_rule, 1.0) for p in curves.tied]
        ys = [p.seconds for p in curves.tied]
        figure.add_trace(ring(xs, ys, [_hover(p) for p in curves.tied]))
    for trace in _predicted_and_missed(curves, offsets):
        figure.add_trace(trace)
    target = "" if curves.target_loss is None else f" (validation loss ≤ {curves.target_loss:.4g})"
    figure.update_layout(
        title=title(f"Time to target{target} vs global batch size"),
        xaxis={"title": "global batch size", "type": "log", "tickvals": sizes, **AXIS},
        yaxis={"title": "training time to target (s)", "range": [0.0, curves.top], **AXIS},
        legend=legend(_legend(curves)),
        **STYLE,
    )
    return figure


def _predicted_and_missed(curves: TargetCurves, offsets: dict[str, float]) -> list[go.Scatter]:
    """The predicted curve (dashed, where it could be timed) and ✕ at 0 for each missed size."""
    import plotly.graph_objects as go

    traces = []
    timed = [p for p in curves.predicted if p.seconds is not None]
    if timed:
        traces.append(
            go.Scatter(
                x=[p.global_batch_size for p in timed],
                y=[p.seconds for p in timed],
                mode="lines+markers",
                name=PREDICTED_TRACE,
                line={"dash": "dash", "color": "#444"},
                marker={"symbol": "diamond-open", "size": 9, "color": "#444"},
                text=[_predicted_hover(p) for p in timed],
                hovertemplate="%{text}<extra>predicted</extra>",
            )
        )
    missed = [(rule, b) for rule, batches in curves.missed.items() for b in batches]
    if missed:
        traces.append(
            go.Scatter(
                x=[b * offsets.get(rule, 1.0) for rule, b in missed],
                y=[0.0] * len(missed),
                mode="markers",
                name=MISSED_TRACE,
                cliponaxis=False,  # at 0, on the axis: drawn whole
                marker={"symbol": "x", "size": 12, "color": "#b00020"},
                text=[f"{rule} rule, global batch {b}: not reached" for rule, b in missed],
                hovertemplate="%{text}<extra></extra>",
            )
        )
    return traces


def _legend(curves: TargetCurves) -> str:
    lines = ["learning-rate rule"]
    if any(p.high is not None for ps in curves.by_rule.values() for p in ps):
        lines.append("<sub>error bars: 95 % CI over the runs</sub>")
    if curves.predicted and not any(p.seconds is not None for p in curves.predicted):
        lines.append("<sub>prediction: no measured throughput to time it</sub>")
    return "<br>".join(lines)


def _hover(p: TargetPoint) -> str:
    samples = "" if p.samples is None else f", {p.samples:,} samples"
    runs = "" if p.runs is None else f", {p.runs} run{'s' if p.runs != 1 else ''}"
    ci = "" if p.low is None or p.high is None else f"<br>95 % CI {p.low:.1f}–{p.high:.1f} s"
    return (
        f"trial #{p.trial}: global batch {p.global_batch_size}, {p.lr_rule} rule"
        f"<br>{p.seconds:.1f} s to target{samples}{runs}{ci}"
    )


def _predicted_hover(p: PredictedPoint) -> str:
    measured = "" if p.measured_samples is None else f" (measured {p.measured_samples:,.0f})"
    return (
        f"global batch {p.global_batch_size}: {p.samples:,.0f} samples predicted{measured}"
        f"<br>÷ measured samples/s = {p.seconds:.1f} s"
    )


def _rule_trace(rule: str, points: list[TargetPoint], offset: float) -> go.Scatter:
    import plotly.graph_objects as go

    bars = any(p.high is not None for p in points)
    return go.Scatter(
        x=[p.global_batch_size * offset for p in points],
        y=[p.seconds for p in points],
        mode="lines+markers",
        name=f"{rule} rule",
        line={"color": rule_color(rule)},
        marker={"size": 8},
        error_y={
            "type": "data",
            "symmetric": False,
            "array": [max((p.high or p.seconds) - p.seconds, 0.0) for p in points],
            "arrayminus": [max(p.seconds - (p.low or p.seconds), 0.0) for p in points],
            "color": rule_color(rule),
        }
        if bars
        else None,
        customdata=[[p.trial, p.global_batch_size] for p in points],
        text=[_hover(p) for p in points],
        hovertemplate="%{text}<extra></extra>",
    )
