"""Checks the browser tests of the dashboard and the report share."""

from __future__ import annotations

from typing import Any


def assert_titles_clear_of_the_toolbar(page: Any, plots: str) -> None:
    """Each plotly plot matched by ``plots`` has its title below its modebar (the toolbar plotly
    shows while the mouse is over the plot), so the toolbar hides no part of the title."""
    for plot in page.locator(plots).all():
        plot.hover()
        title = plot.locator(".gtitle").bounding_box()
        modebar = plot.locator(".modebar").bounding_box()
        assert title and modebar and modebar["height"] > 10, (title, modebar)
        assert title["y"] >= modebar["y"] + modebar["height"], (title, modebar)
