"""Unit tests of what the dashboard note, the plots and the report say, over hand-made trials."""

from __future__ import annotations

import re

import plotly.graph_objects as go
from test_recommend import make_trial, run_recommend

from tuner.figures import (
    OOM_TRACE,
    Point,
    batch_curves,
    batch_figure,
    pareto_front,
    study_figures,
)
from tuner.note import markdown_table, study_note
from tuner.report import is_missing_renderer, render_html
from tuner.summary import TRIAL_COLUMNS, recommendation_rows, trial_rows

ATTRS = {
    "device_signatures": ["2x cpu"],
    "versions": {"tensorflow": "2.99", "optuna": "5.0"},
    "workload": {"n_train": 1000, "n_val": 100, "parameters": 1234},
    "spec": {"workload": {"model": "m:build"}},
}


def oom_study() -> list:
    """64 and 128 train under three rules; 256 runs out of memory, 512 is implied."""
    return [
        make_trial(0, 64, "none", loss=0.50, throughput=1000.0),
        make_trial(1, 64, "linear", loss=0.49, throughput=1010.0),
        make_trial(2, 64, "sqrt", loss=0.495, throughput=990.0),
        make_trial(3, 128, "none", loss=0.60, throughput=1900.0),
        make_trial(4, 128, "linear", loss=0.495, throughput=2000.0),
        make_trial(5, 128, "sqrt", loss=0.52, throughput=1950.0),
        make_trial(6, 256, "none", status="oom", error="OOM when allocating"),
        make_trial(7, 256, "linear", status="oom-implied", error="256 ran out of memory"),
        make_trial(8, 512, "none", status="oom-implied", error="256 ran out of memory"),
        make_trial(9, 512, "linear", status="oom-implied", error="256 ran out of memory"),
    ]


def test_batch_curves_group_by_rule_and_mark_oom_sizes():
    curves = batch_curves(oom_study())
    assert list(curves.by_rule) == ["linear", "none", "sqrt"]
    assert [p.global_batch_size for p in curves.by_rule["linear"]] == [64, 128]
    assert [p.throughput for p in curves.by_rule["none"]] == [1000.0, 1900.0]
    assert curves.oom == {256: "oom", 512: "oom-implied"}


def test_a_measured_oom_wins_over_an_implied_one_at_the_same_size():
    trials = [
        make_trial(0, 64, "none", loss=0.5, throughput=10.0),
        make_trial(1, 128, "linear", status="oom-implied"),
        make_trial(2, 128, "none", status="oom"),
    ]
    assert batch_curves(trials).oom == {128: "oom"}


def test_batch_figure_marks_oom_sizes_in_its_data():
    figure = batch_figure(batch_curves(oom_study()), "throughput")
    names = [trace.name for trace in figure.data]
    assert names == ["linear rule", "none rule", "sqrt rule", OOM_TRACE]
    oom = figure.data[-1]
    assert list(oom.x) == [256, 512]
    assert list(oom.customdata) == ["oom", "oom-implied"]
    assert list(figure.layout.xaxis.tickvals) == [64, 128, 256, 512]
    loss = batch_figure(batch_curves(oom_study()), "final_loss")
    assert list(loss.data[0].y) == [0.49, 0.495]


def test_no_oom_trace_when_everything_fits():
    trials = [make_trial(0, 64, "none", loss=0.5, throughput=10.0)]
    figure = batch_figure(batch_curves(trials), "throughput")
    assert OOM_TRACE not in [trace.name for trace in figure.data]


def test_baseline_is_a_horizontal_line_on_the_throughput_plot():
    figure = batch_figure(batch_curves(oom_study(), baseline_throughput=700.0), "throughput")
    assert [shape.y0 for shape in figure.layout.shapes if shape.type == "line"] == [700.0]


def point(trial: int, loss: float, throughput: float) -> Point:
    return Point(trial, 64, 32, "none", 1e-3, throughput, loss)


def test_pareto_front_keeps_only_undominated_points():
    a, b, c, d = point(0, 0.1, 100), point(1, 0.2, 300), point(2, 0.3, 200), point(3, 0.1, 50)
    assert pareto_front([a, b, c, d]) == [a, b]
    assert pareto_front([]) == []


def test_study_figures_star_the_recommended_trial():
    trials = oom_study()
    rec = run_recommend(trials)
    figures = study_figures(trials, recommended_trial=rec["trial_number"])
    assert set(figures) == {"throughput-vs-batch", "loss-vs-batch", "pareto"}
    assert all(isinstance(f, go.Figure) for f in figures.values())
    star = next(t for t in figures["pareto"].data if t.name == "recommended")
    assert list(star.y) == [rec["throughput"]] == [2000.0]


def test_note_says_recommendation_feasibility_trials_and_versions():
    trials = oom_study()
    rec = run_recommend(trials)
    note = study_note("unit", trials, ATTRS, rec, "2026-01-01T00:00:00+00:00")
    assert "global batch **128**" in note and "(linear rule)" in note
    assert "**Largest feasible global batch:** 128" in note
    assert "**out of memory:** 256, 512" in note
    assert "tensorflow 2.99" in note and "2x cpu" in note
    # One Markdown row per grid point, with its status.
    rows = [line for line in note.splitlines() if re.match(r"\| \d+ \|", line)]
    assert len(rows) == 10
    assert "| 6 | PRUNED | oom | 256 |" in note


def test_note_without_a_complete_trial():
    trials = [make_trial(0, 64, "none", status="oom")]
    note = study_note("unit", trials, {}, None, "now")
    assert "No trial has completed yet" in note
    assert "**Largest feasible global batch:** none yet" in note


def test_markdown_table_escapes_pipes():
    table = markdown_table(["a", "b"], [["x|y", ""]])
    assert table.splitlines()[2] == "| x\\|y |   |"


def test_the_rich_table_note_and_report_share_rows():
    trials = oom_study()
    rows = trial_rows(trials)
    assert [len(r) for r in rows] == [len(TRIAL_COLUMNS)] * len(trials)
    assert rows[0][:4] == ["0", "COMPLETE", "ok", "64"]
    rec = run_recommend(trials)
    labels = [label for label, _ in recommendation_rows(rec)]
    assert labels[:2] == ["global batch size", "learning rate"]


def test_report_page_escapes_and_holds_every_part():
    bad = "<img src=x onerror=alert(1)>"
    trials = [*oom_study(), make_trial(10, 32, "none", status="error", error=bad)]
    rec = run_recommend(trials)
    page = render_html("a<b", trials, ATTRS, rec, study_figures(trials), "now")
    assert bad not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "tuner report: a&lt;b" in page
    for graph_id in ("throughput-vs-batch", "loss-vs-batch", "pareto"):
        assert f'id="{graph_id}"' in page
    assert page.count("plotly.js v") == 1  # plotly.js inlined once: the page works offline
    assert 'class="status-oom"' in page


def test_missing_renderer_is_recognised_and_other_errors_are_not():
    assert is_missing_renderer(RuntimeError("Kaleido requires Google Chrome to be installed."))
    assert not is_missing_renderer(RuntimeError("something else"))


def test_device_names_are_shortened():
    from tuner.summary import short_device

    assert short_device("/job:localhost/replica:0/task:0/device:GPU:1") == "GPU:1"
    assert short_device("/cpu:0") == "CPU:0"
