"""The report's trial table fits a 1400-px window and the dashboard gives tuner's plots the page's
width: hand-made trials in a real SQLite study, the real ``tuner dashboard`` and a real browser."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import optuna
import pytest
from conftest import save_screenshot
from dashboards import start_dashboard, stop
from trials import make_trial, measured_trial, run_recommend

from tuner.views.batch_figures import study_figures
from tuner.views.dashboard import PLOT_HEIGHT_PX, WIDE_PLOTS_STYLE, publish, wide_plots
from tuner.views.note import study_note
from tuner.views.report import render_html

WINDOW = 1400
TUNER = [sys.executable, "-m", "tuner"]
HOST = "gpu-node-017.cluster.example.org"
MODEL = {"units": 128, "dropout": 0.25, "activation": "relu"}


def busy_study() -> list[optuna.trial.FrozenTrial]:
    """Every column of the trials table has something to say: repeats, ``same_as``, a
    hypermodel, long host names, an out-of-memory error, a crash's long message."""
    extra = {"host": HOST, "model_hyperparameters": MODEL, "gradient_noise_scale": 1234.5}
    runs = [13100.0, 17216.0, 18372.0]
    return [
        measured_trial(0, 64, "none", runs=runs[:1], loss=0.0062, goodput=12000.0, **extra),
        make_trial(1, 64, "linear", loss=0.0062, throughput=runs[0], same_as=0, **extra),
        measured_trial(2, 128, "sqrt", runs=[24000.0], loss=0.0065, goodput=20000.0, **extra),
        measured_trial(3, 64, "none", runs=runs[:2], loss=0.0062, repeat_of=0, repeat_index=2),
        measured_trial(6, 64, "none", runs=runs, loss=0.0062, repeat_of=0, repeat_index=3, **extra),
        make_trial(
            4, 256, "linear", status="oom", error="OOM when allocating tensor " * 4, **extra
        ),
        make_trial(5, 128, "none", status="crashed", error="child died by SIGSEGV " * 4, **extra),
    ]


def sqlite_study(path: Path, trials: list[optuna.trial.FrozenTrial]) -> optuna.Study:
    study = optuna.create_study(
        storage=f"sqlite:///{path}", study_name="wide", directions=["minimize", "maximize"]
    )
    for trial in trials:
        study.add_trial(trial)
    return study


@pytest.mark.browser
def test_the_report_table_fits_a_1400_px_window(chromium: Any, tmp_path: Path) -> None:
    trials = busy_study()
    rec = run_recommend(trials)
    page_html = render_html("wide", trials, {}, rec, study_figures(trials, rec), "now")
    (tmp_path / "report.html").write_text(page_html)
    page = chromium.new_page(viewport={"width": WINDOW, "height": 1000})
    try:
        page.goto((tmp_path / "report.html").as_uri())
        page.wait_for_selector("#pareto .scatterlayer .trace")
        assert page.evaluate("document.documentElement.scrollWidth") <= WINDOW
        right = page.evaluate(
            "document.querySelector('table.trials').getBoundingClientRect().right"
        )
        assert right <= WINDOW
        headers = page.eval_on_selector_all("table.trials th", "els => els.map(e => e.innerText)")
        assert "note" in headers and "host" in headers  # fitted, not by leaving them out
        # No number is broken over two lines: every one-word cell stays one line high.
        tall = page.eval_on_selector_all(
            "table.trials td:not(.wrap)",
            "els => els.filter(e => e.getClientRects().length && e.innerText.includes('\\n'))"
            ".length",
        )
        assert tall == 0
        # One number for the configuration (#6, its representative), its runs listed under it.
        runs = page.eval_on_selector_all(
            "table.trials tr.run", "rows => rows.map(r => r.innerText.split('\t'))"
        )
        assert [cells[0] for cells in runs] == ["↳\u00a0#0", "↳\u00a0#3", "↳\u00a0#6"]
        assert [cells[-1] for cells in runs] == [f"run {n} of #6" for n in (1, 2, 3)]
        assert "13,100" in runs[0] and "0.0062" in runs[0]
        page.locator("table.trials").scroll_into_view_if_needed()
        save_screenshot(page, tmp_path, "report-table.png")
    finally:
        page.close()


def test_wide_plots_styles_the_page_and_leaves_the_api_alone() -> None:
    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        if environ["PATH_INFO"].startswith("/api"):
            start_response("200 OK", [("Content-Type", "application/json")])
            return [b'{"a": "</head>"}']
        assert "HTTP_IF_MODIFIED_SINCE" not in environ  # the whole page, never a stale copy
        page = b"<html><head><title>x</title></head><body></body></html>"
        headers = [("Content-Type", "text/html"), ("Content-Length", str(len(page)))]
        start_response("200 OK", [*headers, ("Last-Modified", "Mon, 1 Jan 2024 00:00:00 GMT")])
        return [page]

    answers: list[tuple[str, list[tuple[str, str]]]] = []
    wrapped = wide_plots(app)
    cached = {"PATH_INFO": "/dashboard/studies/1", "HTTP_IF_MODIFIED_SINCE": "now"}
    body = b"".join(wrapped(cached, lambda s, h, e=None: answers.append((s, h))))
    assert body.count(WIDE_PLOTS_STYLE.encode()) == 1 and body.index(b"<style>") < body.index(
        b"</head>"
    )
    headers = dict(answers[-1][1])
    assert headers["Content-Length"] == str(len(body)) and "Last-Modified" not in headers
    api = b"".join(wrapped({"PATH_INFO": "/api/studies"}, lambda s, h, e=None: None))
    assert api == b'{"a": "</head>"}'


@pytest.mark.browser
def test_the_dashboard_shows_tuners_plots_full_width_with_the_legend_below(
    chromium: Any, tmp_path: Path
) -> None:
    trials = busy_study()
    study = sqlite_study(tmp_path / "wide.db", trials)
    publish(study, run_recommend(trials))
    proc, address = start_dashboard(tmp_path, f"sqlite:///{tmp_path}/wide.db")
    page = chromium.new_page(viewport={"width": WINDOW, "height": 1000})
    try:
        page.goto(address)
        page.get_by_text(re.compile(r"^\d+\. wide$")).first.click()
        plots = "[id^='user-defined-plot:']"
        page.locator(f"{plots} .gtitle").nth(2).wait_for()
        boxes = page.eval_on_selector_all(
            plots, "els => els.map(e => [e.getBoundingClientRect().width, e.offsetHeight])"
        )
        assert len(boxes) == 3
        for width, height in boxes:  # the page's width less the side bar, not half of it
            assert width > 0.8 * WINDOW and height == PLOT_HEIGHT_PX
        for plot in page.locator(plots).all():  # the legend under the plot area, not beside it
            legend = plot.locator(".legend").bounding_box()
            area = plot.locator(".nsewdrag").first.bounding_box()
            assert legend and area and legend["y"] > area["y"] + area["height"]
        page.locator(plots).first.scroll_into_view_if_needed()
        save_screenshot(page, tmp_path, "dashboard-wide.png")
    finally:
        page.close()
        assert stop(proc)[0] == 0


def test_the_note_lists_a_configurations_runs_under_its_representative() -> None:
    trials = busy_study()
    lines = study_note("wide", trials, {}, run_recommend(trials), "now").splitlines()
    (first,) = [n for n, line in enumerate(lines) if line.startswith("| 6 |")]
    runs = lines[first + 1 : first + 4]
    assert [line.split(" | ")[0] for line in runs] == ["| ↳\u00a0#0", "| ↳\u00a0#3", "| ↳\u00a0#6"]
    assert [line.split(" | ")[-1] for line in runs] == [f"run {n} of #6 |" for n in (1, 2, 3)]
    assert "runs #0, #3, #6" in lines[first]
    assert "= #6 (same training)" in next(line for line in lines if line.startswith("| 1 |"))
