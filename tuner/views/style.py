"""The look every tuner figure shares: rule colours, a compact white style, the shared markers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import plotly.graph_objects as go

RULE_COLORS: dict[str, str] = {
    "none": "#636efa",
    "linear": "#ef553b",
    "sqrt": "#00cc96",
    "linear-warmup": "#ab63fa",
    "sqrt-adam": "#19d3f3",
}
"""One colour per rule of :data:`tuner.core.scaling.LR_RULES`, the same in every figure."""
UNKNOWN_RULE_COLOR = "#888"  # a rule stored by another tuner version
# A compact white style set directly: a named template would be stored with every figure
# (optuna-dashboard keeps each figure in the study, in pieces).
AXIS = {"gridcolor": "#e5e5e5", "zeroline": False, "linecolor": "#999", "showline": True}
STYLE: dict[str, Any] = {
    "template": "none",
    "plot_bgcolor": "white",
    "paper_bgcolor": "white",
    "font": {"family": "Arial, sans-serif", "size": 12, "color": "#2a3f5f"},
    # Room at the top for the title below plotly's toolbar (the modebar, ~30 px at the top right).
    "margin": {"l": 70, "r": 30, "t": 76, "b": 60},
}


def legend(text: str = "") -> dict[str, Any]:
    """The legend below the plot (beside it, it took half of a half-width dashboard card)."""
    below = {"orientation": "h", "x": 0, "xanchor": "left", "y": -0.2, "yanchor": "top"}
    return {**below, "title": {"text": text, "side": "top"}}


TITLE_TOP_PX = 36
"""The title's top edge, in pixels: under the modebar, which would hide it in half-width cards."""


def rule_color(rule: str) -> str:
    """The colour of ``rule``'s traces."""
    return RULE_COLORS.get(rule, UNKNOWN_RULE_COLOR)


def title(text: str) -> dict[str, Any]:
    """A title at the top left, below the modebar (which sits at the top right)."""
    place = {"x": 0, "xref": "paper", "xanchor": "left", "y": 1, "yref": "container"}
    return {"text": text, **place, "yanchor": "top", "pad": {"t": TITLE_TOP_PX}}


TIED_TRACE = "tied with the recommendation"
"""The trace that rings the candidates whose 95 % interval overlaps the recommended one's."""


def _marks(
    xs: Sequence[float], ys: Sequence[float], texts: Sequence[str], tag: str, **style: Any
) -> Any:
    """Markers at ``xs``, ``ys``, each hovering its text and ``tag``."""
    import plotly.graph_objects as go

    style["hovertemplate"] = f"%{{text}}<extra>{tag}</extra>"
    return go.Scatter(x=list(xs), y=list(ys), mode="markers", text=list(texts), **style)


def ring(xs: Sequence[float], ys: Sequence[float], texts: Sequence[str]) -> go.Scatter:
    """Open rings around the tied candidates' points."""
    marker = {"symbol": "circle-open", "size": 20, "color": "#ffa600", "line": {"width": 2.5}}
    name = f"{TIED_TRACE} (95 % intervals overlap)"
    return _marks(xs, ys, texts, "tied", name=name, marker=marker, legendrank=1002)


CANDIDATES_TRACE = "counted equal in loss"
"""Name of the trace that marks the candidates: final losses within the tolerance of the best."""


def tolerance_text(tolerance: float) -> str:
    """A relative loss tolerance as a percentage: ``5 %``, ``0.43 %``."""
    return f"{tolerance * 100:.2g} %"


def halo(
    xs: Sequence[float], ys: Sequence[float], texts: Sequence[str], tolerance: float | None
) -> go.Scatter:
    """A green disc behind each candidate: what the loss tolerance makes equal to the pick."""
    within = "" if tolerance is None else f" (within {tolerance_text(tolerance)} of the best)"
    marker = {"symbol": "circle", "size": 24, "color": "rgba(27, 127, 59, 0.22)"}
    name = f"{CANDIDATES_TRACE}{within}"
    # legendrank: before the star (1001) and the ring (1002)
    return _marks(xs, ys, texts, "candidate", name=name, marker=marker, legendrank=1000)


def star(x: float, y: float, name: str, text: str) -> go.Scatter:
    """The recommended point, drawn under its rule's marker (which stays visible in the star)."""
    marker = {"symbol": "star", "size": 20, "color": "#ffa600", "line": {"color": "#444"}}
    return _marks([x], [y], [text], "recommended", name=name, marker=marker, legendrank=1001)
