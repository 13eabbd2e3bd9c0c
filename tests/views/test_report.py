"""``tuner report`` on a real study with out-of-memory trials, opened in a real browser."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from browser_checks import assert_titles_clear_of_the_toolbar
from conftest import run_tuner, save_screenshot, sha256, tuner_env

pytestmark = pytest.mark.slow


def report_png(
    work: Path, url: str, out: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``tuner report --format png`` of the ``wide`` study into ``out``."""
    args = ("--storage", url, "--study-name", "wide", "--output", str(out), "--format", "png")
    return run_tuner("report", *args, cwd=work, env=env)


@pytest.mark.browser
def test_report_renders_plots_that_mark_the_oom_sizes(wide_study, chromium, tmp_path):
    work, url = wide_study
    rec = json.loads((work / "rec.json").read_text())
    assert rec["oom_batch_sizes"] == [4096, 8192]
    out = tmp_path / "out" / "report.html"
    out.parent.mkdir()  # --output names a file in an existing folder (docs/reference/cli.md)
    result = report_png(work, url, out)
    assert result.returncode == 0, result.stderr
    for graph_id in ("throughput-vs-batch", "loss-vs-batch", "pareto"):
        png = out.with_name(f"report-{graph_id}.png")
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000

    page = chromium.new_page(viewport={"width": 1200, "height": 1400})
    try:
        page.goto(out.as_uri())
        page.wait_for_selector("#pareto .scatterlayer .trace")
        plots = page.eval_on_selector_all(".js-plotly-plot", "els => els.map(e => e.id)")
        assert plots == ["throughput-vs-batch", "loss-vs-batch", "pareto"]
        for plot in plots:  # drawn: an SVG with one group per trace
            assert page.locator(f"#{plot} .scatterlayer .trace").count() >= 2
        for plot in ("throughput-vs-batch", "loss-vs-batch"):
            traces = page.evaluate(
                f"document.getElementById('{plot}').data.map(t => [t.name, t.x, t.customdata])"
            )
            oom = {name: (x, kinds) for name, x, kinds in traces}["out of memory"]
            assert oom == ([4096, 8192], ["oom", "oom-implied"])
        lead = page.inner_text("#recommendation")
        assert f"global batch {rec['global_batch_size']} (" in lead
        assert "out-of-memory sizes\t4096, 8192" in page.inner_text("body")
        # The loss plot: the band the recommendation chose within, and the recommended point.
        loss = page.evaluate("document.getElementById('loss-vs-batch').layout.shapes")
        (band,) = [s for s in loss if s.get("showlegend")]
        assert band["name"] == "loss tolerance: within 2 % of the best loss"
        # The export rounds the loss (6 significant digits); the band holds the stored value.
        rounding = 1e-6 * band["y0"]
        assert band["y0"] - rounding <= rec["final_loss"] <= band["y1"] + rounding
        star = page.evaluate(
            "document.getElementById('loss-vs-batch').data"
            f".find(t => t.name === 'recommended (trial #{rec['trial_number']})').y"
        )
        assert star == [pytest.approx(rec["final_loss"], rel=1e-5)]  # the JSON rounds
        # The Pareto front is drawn (ringed points), even when it is a single point.
        front = page.evaluate(
            "document.getElementById('pareto').data.find(t => t.name.startsWith('Pareto front'))"
        )
        assert "markers" in front["mode"] and len(front["x"]) >= 1
        assert page.locator("#pareto .scatterlayer .trace path.point").count() >= 3
        assert_titles_clear_of_the_toolbar(page, ".js-plotly-plot")
        # The top of the page down to the loss plot: the answer, then the batch plots.
        page.set_viewport_size({"width": 1200, "height": 1900})
        page.evaluate("window.scrollTo(0, 0)")
        page.locator("#loss-vs-batch").hover(position={"x": 500, "y": 10})
        save_screenshot(page, tmp_path, "report.png")
    finally:
        page.close()


def test_report_errors_leave_the_storage_alone(wide_study, tmp_path):
    work, url = wide_study
    before = sha256(work / "wide.db")
    unknown = run_tuner("report", "--storage", url, "--study-name", "nope", cwd=work)
    assert unknown.returncode == 2 and "no study named 'nope'" in unknown.stderr
    bad = run_tuner("report", "--storage", url, "--study-name", "wide", "--format", "pdf", cwd=work)
    assert bad.returncode == 2 and "'pdf' is not one of 'html', 'png'" in bad.stderr
    assert sha256(work / "wide.db") == before
    assert not list(work.glob("report*"))


def test_png_without_a_browser_keeps_the_html_and_says_why(wide_study, tmp_path):
    work, url = wide_study
    out = tmp_path / "r.html"
    env = tuner_env(BROWSER_PATH="/usr/bin/nonexistent-chrome", PATH="/nonexistent")
    result = report_png(work, url, out, env=env)
    assert result.returncode == 1
    assert "PNG export needs Chrome or Chromium" in result.stderr
    assert "Traceback" not in result.stderr
    assert out.stat().st_size > 1_000_000  # the self-contained page, plotly.js inlined
