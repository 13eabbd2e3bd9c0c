"""Unit tests of what the dashboard note, the plots and the report say, over hand-made trials."""

from __future__ import annotations

import json
import math
import re
import socket

import optuna
import plotly.graph_objects as go
import pytest
from trials import make_trial, run_recommend

from tuner.core.errors import ConfigError
from tuner.core.scaling import LR_RULES
from tuner.views.batch_data import BatchCurves, Point, batch_curves, pareto_front
from tuner.views.batch_figures import OOM_TRACE, batch_figure, pareto_figure, study_figures
from tuner.views.dashboard import DASHBOARD_PLOTS, publish, serve
from tuner.views.note import PLOTS_LINK, best_trials_text, markdown_table, study_note
from tuner.views.report import is_missing_renderer, render_html, write_report
from tuner.views.style import CANDIDATES_TRACE, RULE_COLORS
from tuner.views.summary import TRIAL_COLUMNS, recommendation_rows, trial_rows

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
    figure = batch_figure(batch_curves(oom_study(), {"baseline_throughput": 700.0}), "throughput")
    assert [shape.y0 for shape in figure.layout.shapes if shape.type == "line"] == [700.0]


def test_every_rule_has_its_own_colour_in_both_kinds_of_figure():
    assert set(RULE_COLORS) == set(LR_RULES)
    points = [
        Point(i, 64, 32, rule, 1e-3, 100.0 * (i + 1), 0.5 - 0.01 * i)
        for i, rule in enumerate(LR_RULES)
    ]
    curves = BatchCurves({p.lr_rule: [p] for p in points}, oom={})
    lines = {trace.name: trace.line.color for trace in batch_figure(curves, "throughput").data}
    assert lines == {f"{rule} rule": RULE_COLORS[rule] for rule in LR_RULES}
    assert len(set(lines.values())) == len(LR_RULES)
    pareto = pareto_figure(points)
    markers = {t.name: t.marker.color for t in pareto.data if t.name.endswith(" rule")}
    assert markers == lines


RULES_3 = ("linear", "none", "sqrt")


def point(trial: int, loss: float, throughput: float) -> Point:
    return Point(trial, 64, 32, "none", 1e-3, throughput, loss)


def test_pareto_front_keeps_only_undominated_points():
    a, b, c, d = point(0, 0.1, 100), point(1, 0.2, 300), point(2, 0.3, 200), point(3, 0.1, 50)
    assert pareto_front([a, b, c, d]) == [a, b]
    assert pareto_front([]) == []


def test_study_figures_star_the_recommended_trial():
    trials = oom_study()
    rec = run_recommend(trials)
    figures = study_figures(trials, rec)
    assert set(figures) == {"throughput-vs-batch", "loss-vs-batch", "pareto"}
    assert all(isinstance(f, go.Figure) for f in figures.values())
    star = next(t for t in figures["pareto"].data if t.name == "recommended")
    assert list(star.y) == [rec["throughput"]] == [2000.0]
    for graph_id, value in [("throughput-vs-batch", 2000.0), ("loss-vs-batch", 0.495)]:
        (star,) = [t for t in figures[graph_id].data if t.name == "recommended (trial #4)"]
        assert list(star.y) == [value] and star.marker.symbol == "star"
        linear = next(t for t in figures[graph_id].data if t.name == "linear rule")
        assert list(star.x) == [linear.x[1]]  # on its rule's (shifted) point at batch 128


def test_the_loss_plot_shades_the_tolerance_band_of_the_recommendation():
    trials = oom_study()
    rec = run_recommend(trials, tolerance=0.05)
    assert rec["candidates"] == [0, 1, 2, 4]  # losses up to 0.49 × 1.05
    loss = study_figures(trials, rec)["loss-vs-batch"]
    (band,) = [s for s in loss.layout.shapes if s.type == "rect" and s.showlegend]
    assert (band.y0, band.y1) == (0.49, pytest.approx(0.49 * 1.05))
    assert band.name == "loss tolerance: within 5 % of the best loss"
    assert (band.xref, band.yref) == ("x domain", "y")  # across the whole plot
    throughput = study_figures(trials, rec)["throughput-vs-batch"]
    assert not [s for s in throughput.layout.shapes if s.showlegend]
    assert not [s for s in study_figures(trials)["loss-vs-batch"].layout.shapes if s.showlegend]


def test_the_pareto_plot_draws_the_tolerance_and_the_candidates_it_makes_equal():
    trials = oom_study()
    rec = run_recommend(trials, tolerance=0.05)
    assert rec["candidates"] == [0, 1, 2, 4]
    figures = study_figures(trials, rec)
    pareto = figures["pareto"]
    (band,) = [s for s in pareto.layout.shapes if s.type == "rect" and s.showlegend]
    assert (band.x0, band.x1) == (0.49, pytest.approx(0.49 * 1.05))  # across the loss axis
    assert (band.xref, band.yref) == ("x", "y domain")
    for graph_id in ("pareto", "throughput-vs-batch", "loss-vs-batch"):
        (halo,) = [t for t in figures[graph_id].data if t.name.startswith(CANDIDATES_TRACE)]
        assert "within 5 % of the best" in halo.name
        assert len(halo.x) == 4  # the star (#4) is among them
    (halo,) = [t for t in pareto.data if t.name.startswith(CANDIDATES_TRACE)]
    assert (rec["final_loss"], rec["throughput"]) in set(zip(halo.x, halo.y, strict=True))
    assert f"the pick is #{rec['trial_number']}" in pareto.layout.title.text
    assert "count as equal" in pareto.layout.legend.title.text


def test_legends_sit_below_the_plots():
    rec = run_recommend(oom_study())
    for figure in study_figures(oom_study(), rec).values():
        assert figure.layout.legend.orientation == "h" and figure.layout.legend.y < 0


def test_rules_at_one_batch_are_drawn_side_by_side_as_the_legend_says():
    trials = [
        make_trial(i, batch, rule, loss=0.5, throughput=1000.0)  # equal: they would overlap
        for i, (batch, rule) in enumerate((b, r) for b in (64, 128) for r in RULES_3)
    ]
    figure = batch_figure(batch_curves(trials), "final_loss")
    xs = {t.name: list(t.x) for t in figure.data}
    at_64 = sorted(x[0] for x in xs.values())
    assert len(set(at_64)) == 3 and at_64[0] < 64 < at_64[2] and at_64[1] == 64
    assert at_64[0] / 64 > 0.95 and at_64[2] / 64 < 1.05  # a shift, not another batch
    assert [x[1] / x[0] for x in xs.values()] == pytest.approx([2, 2, 2])
    for trace in figure.data:  # the batch as measured rides along, for the hover and tests
        assert [row[1] for row in trace.customdata] == [64, 128]
    assert "drawn side by side" in figure.layout.legend.title.text
    assert "±3 %" in figure.layout.legend.title.text
    one_rule = batch_figure(batch_curves(trials[:1]), "final_loss")
    assert list(one_rule.data[0].x) == [64] and one_rule.layout.legend.title.text == (
        "learning-rate rule"
    )


def test_a_pareto_front_of_one_point_is_drawn():
    best, worse = point(0, 0.1, 300), point(1, 0.2, 100)
    (front,) = [t for t in pareto_figure([best, worse]).data if t.name.startswith("Pareto")]
    assert front.name == "Pareto front (1 point)"
    assert (list(front.x), list(front.y)) == ([0.1], [300])
    assert "markers" in front.mode and front.marker.size >= 12  # a ring, not a line of length 0


def test_titles_sit_below_the_toolbar():
    for figure in study_figures(oom_study()).values():
        title = figure.layout.title
        assert (title.yref, title.y, title.yanchor, title.xanchor) == (
            "container",
            1,
            "top",
            "left",
        )
        assert title.pad.t >= 32 and figure.layout.margin.t > title.pad.t + 30


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


def test_trial_rows_follow_the_columns_and_recommendation_rows_lead_with_the_answer():
    trials = oom_study()
    rows = trial_rows(trials)
    assert [len(r) for r in rows] == [len(TRIAL_COLUMNS)] * len(trials)
    assert rows[0][:4] == ["0", "COMPLETE", "ok", "64"]
    rec = run_recommend(trials)
    labels = [label for label, _ in recommendation_rows(rec)]
    assert labels[:2] == ["global batch size", "learning rate"]


def test_the_critical_batch_is_shown_as_the_noise_scale():
    trials = [
        make_trial(
            0,
            128,
            loss=0.5,
            throughput=1000.0,
            gradient_noise_scale=503.6,
            statistical_efficiency=0.9,
            goodput=900.0,
        )
    ]
    rows = dict(recommendation_rows(run_recommend(trials)))
    text = rows["statistical efficiency"]
    assert "gradient noise scale B_noise 504" in text
    assert "critical batch ≈ B_noise = 504" in text and "McCandlish et al. 2018" in text
    assert "efficiency 0.90 vs batch 64, goodput 900 samples/s" in text
    plain = dict(recommendation_rows(run_recommend([make_trial(0, 128, loss=0.5, throughput=1.0)])))
    assert "statistical efficiency" not in plain


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
    from tuner.views.summary import short_device

    assert short_device("/job:localhost/replica:0/task:0/device:GPU:1") == "GPU:1"
    assert short_device("/cpu:0") == "CPU:0"


def in_memory_study(trials: list) -> optuna.Study:
    study = optuna.create_study(directions=["minimize", "maximize"], study_name="mem")
    for trial in trials:
        study.add_trial(trial)
    return study


def test_publish_stores_the_note_and_the_batch_plots_and_rewrites_them():
    from optuna_dashboard import get_note
    from optuna_dashboard._custom_plot_data import get_plotly_graph_objects

    study = in_memory_study(oom_study())
    rec = run_recommend(study.trials)
    publish(study, rec)
    publish(study, rec)  # rewriting replaces, it does not append
    assert get_note(study).count("## tuner study `mem`") == 1
    system_attrs = study._storage.get_study_system_attrs(study._study_id)
    graphs = get_plotly_graph_objects(system_attrs)
    # No target loss: no time-to-target plot.
    assert set(graphs) == {"throughput-vs-batch", "loss-vs-batch", "pareto"} < set(DASHBOARD_PLOTS)
    data = json.loads(graphs["throughput-vs-batch"])["data"]
    names = {"none rule", "linear rule", "sqrt rule", OOM_TRACE, "recommended (trial #4)"}
    assert {t["name"] for t in data} - names == {
        f"{CANDIDATES_TRACE} (within {rec['loss_tolerance'] * 100:.2g} % of the best)"
    }
    assert "pareto" in graphs  # tuner's, with the tolerance: the pick among its equals


def test_the_note_says_why_optuna_dashboards_best_trials_may_not_hold_the_pick():
    trials = oom_study()
    rec = run_recommend(trials, tolerance=0.05)
    note = study_note("unit", trials, ATTRS, rec, "now")
    (line,) = [p for p in note.split("\n\n") if "Best Trials" in p]
    assert f"#{rec['trial_number']} may not be" in line and "within 5 % of the best" in line
    assert "(#0, #1, #2, #4)" in line and "./#user-defined-plot:pareto" in line
    raced = best_trials_text({"trial_number": 7, "loss_tolerance": 0.02}, [0, 6, 7])
    assert "earlier runs too (#7's are #0, #6, #7)" in raced and "within 2 % of" in raced


def test_the_note_links_to_the_plots_first():
    note = study_note("unit", oom_study(), ATTRS, None, "now")
    heading, link = note.split("\n\n")[:2]
    assert heading == "## tuner study `unit`"
    assert f"]({PLOTS_LINK})" in link and PLOTS_LINK == "./#user-defined-plot:throughput-vs-batch"


def test_write_report_without_png_and_without_a_recommendation(tmp_path):
    study = in_memory_study([make_trial(0, 64, "none", status="oom", error="OOM")])
    (path,) = write_report(study, None, tmp_path / "sub" / "r.html")
    page = path.read_text()
    assert "No trial has completed yet" in page and 'class="status-oom"' in page
    assert not list(tmp_path.glob("sub/*.tmp")) and not list(tmp_path.glob("sub/*.png"))


def test_write_report_to_an_impossible_place_is_a_config_error(tmp_path):
    (tmp_path / "afile").write_text("x")
    study = in_memory_study(oom_study())
    with pytest.raises(ConfigError, match="cannot write"):
        write_report(study, None, tmp_path / "afile" / "r.html")


def test_the_does_not_fit_label_sits_on_the_log_axis():
    figure = batch_figure(batch_curves(oom_study()), "throughput")
    (label,) = [a for a in figure.layout.annotations if a.text == "does not fit"]
    assert label.x == pytest.approx(math.log10(256 / 2**0.5))


def test_serve_refuses_a_busy_port(tmp_path):
    url = f"sqlite:///{tmp_path}/s.db"
    optuna.create_study(storage=url, study_name="s")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(ConfigError, match=f"port {port} on 127.0.0.1 is already in use"):
            serve(url, "127.0.0.1", port)
