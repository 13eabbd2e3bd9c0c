"""The measured learning-rate law as a picture: the best rate ``lr*`` at each global batch, the
three fixed rules from the smallest batch's, and the fitted law (the recommendation's)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tuner.core.lr_law import RULE_EXPONENTS
from tuner.views.style import AXIS, STYLE, legend, rule_color, title

if TYPE_CHECKING:
    import plotly.graph_objects as go

LAW_PLOT = "lr-star-vs-batch"
"""The id of the figure (stored on the dashboard; in the report)."""
_CENSORED_MARKERS = {"above": "triangle-up-open", "below": "triangle-down-open"}


def law_figures(rec: Mapping[str, Any] | None) -> dict[str, Any]:
    """``{LAW_PLOT: figure}`` when the recommendation carries a measured law, else ``{}``."""
    law = (rec or {}).get("lr_law")
    if not isinstance(law, Mapping) or not law.get("lr_star_by_batch"):
        return {}
    return {LAW_PLOT: law_figure(law)}


def _stars(law: Mapping[str, Any]) -> list[tuple[int, float, float, float, str | None]]:
    """``(batch, lr*, low, high, censored)`` by ascending batch."""
    censored = law.get("censored_batches") or {}
    intervals = law.get("lr_star_ci_by_batch") or {}
    rows = []
    for key, lr in law["lr_star_by_batch"].items():
        low, high = intervals.get(key) or (lr, lr)
        rows.append((int(key), float(lr), float(low), float(high), censored.get(key)))
    return sorted(rows)


def law_text(law: Mapping[str, Any] | None) -> str:
    """The law's sentence with its regime (empty without a law)."""
    if not isinstance(law, Mapping) or not law.get("words"):
        return ""
    return f"{law['words']} [regime: {law.get('regime')}]"


def law_figure(law: Mapping[str, Any]) -> go.Figure:
    """lr* against the global batch, log-log."""
    import plotly.graph_objects as go

    stars = _stars(law)
    sizes = [s[0] for s in stars]
    figure = go.Figure()
    measured = [s for s in stars if not s[4]]
    anchor = measured[0] if measured else stars[0]
    for rule, exponent in RULE_EXPONENTS.items():
        ys = [anchor[1] * (b / anchor[0]) ** exponent for b in sizes]
        figure.add_trace(
            go.Scatter(
                x=sizes,
                y=ys,
                mode="lines",
                name=f"{rule} (lr ∝ B^{exponent:g})",
                line={"color": rule_color(rule), "dash": "dot", "width": 1.5},
            )
        )
    for trace in _fit_traces(law, measured):
        figure.add_trace(trace)
    if measured:
        figure.add_trace(
            go.Scatter(
                x=[s[0] for s in measured],
                y=[s[1] for s in measured],
                mode="markers",
                name="lr* (95 % interval)",
                marker={"color": "#222", "size": 9},
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [s[3] - s[1] for s in measured],
                    "arrayminus": [s[1] - s[2] for s in measured],
                },
                hovertemplate="batch %{x}<br>lr* %{y:.4g}<extra></extra>",
            )
        )
    for side, marker in _CENSORED_MARKERS.items():
        bound = [s for s in stars if s[4] == side]
        if bound:
            figure.add_trace(
                go.Scatter(
                    x=[s[0] for s in bound],
                    y=[s[1] for s in bound],
                    mode="markers",
                    name=f"best at the sweep's {'top' if side == 'above' else 'bottom'} (a bound)",
                    marker={"color": "#222", "size": 11, "symbol": marker},
                )
            )
    figure.update_layout(
        title=title("Best learning rate per batch (measured law)"),
        xaxis={"title": "global batch size", "type": "log", "tickvals": sizes, **AXIS},
        yaxis={"title": "best learning rate lr*", "type": "log", **AXIS},
        legend=legend(_legend(law)),
        **STYLE,
    )
    return figure


def _legend(law: Mapping[str, Any]) -> str:
    alpha, ci = law.get("alpha"), law.get("alpha_ci")
    if alpha is None or not ci:
        return f"regime: {law.get('regime')}"
    return f"alpha = {alpha:.2f} ({ci[0]:.2f}–{ci[1]:.2f}), regime: {law.get('regime')}"


def _fit_traces(
    law: Mapping[str, Any], measured: Sequence[tuple[int, float, float, float, str | None]]
) -> list[go.Scatter]:
    """The fitted law, dashed: slope ``alpha`` up to the critical batch, the other slope past it."""
    import plotly.graph_objects as go

    alpha, critical = law.get("alpha"), law.get("critical_batch")
    if alpha is None or len(measured) < 2:
        return []
    below = [s for s in measured if critical is None or s[0] <= critical]
    x0 = math.exp(sum(math.log(s[0]) for s in below) / len(below))
    y0 = math.exp(sum(math.log(s[1]) for s in below) / len(below))
    end = critical or measured[-1][0]
    xs = [measured[0][0], end]
    ys = [y0 * (x / x0) ** alpha for x in xs]
    after = law.get("slope_past_critical")
    if critical is not None and after is not None:
        xs.append(measured[-1][0])
        ys.append(ys[-1] * (measured[-1][0] / end) ** after)
    line = {"color": "#222", "dash": "dash", "width": 2}
    return [go.Scatter(x=xs, y=ys, mode="lines", name="measured law", line=line)]
