"""What every view shows of the uncertainty (issue 17): one measurement for a ``same_as`` grid
point, a configuration's runs and 95 % interval, ties, the loss tolerance's source, time to
target beside the batch-size model's prediction, and the verdict last. Pure: hand-made trials."""

from __future__ import annotations

import copy

import pytest
from rich.console import Console
from trials import make_trial, measured_trial, run_recommend, target_trial

from tuner.console.display import recommendation_table, trials_table
from tuner.core.configurations import unique_trials
from tuner.core.record import decode
from tuner.views.batch_data import batch_curves, complete_points
from tuner.views.recommendation import recommendation_rows, span_text
from tuner.views.records import RECORD_FIELDS, trial_record
from tuner.views.summary import TRIAL_COLUMNS, trial_layout, trial_rows
from tuner.views.target_data import has_target, target_curves

RUNS = [13100.0, 17216.0, 18372.0]
"""One configuration measured in three fresh processes (the issue's quickstart numbers)."""


def raced_study() -> list:
    """Batch 64 trains once (#1 and #2 are ``same_as`` #0) and is raced to 3 runs (#6, #7);
    batch 128 linear is raced too (#8) and stays tied with it (2 % faster: within the 5 % tie
    margin); 256 ran out of memory."""
    return [
        measured_trial(0, 64, "none", runs=RUNS[:1], loss=0.0062, **_window_ci(12500, 13800)),
        make_trial(1, 64, "linear", loss=0.0062, throughput=RUNS[0], same_as=0, repeats=RUNS[:1]),
        make_trial(2, 64, "sqrt", loss=0.0062, throughput=RUNS[0], same_as=0, repeats=RUNS[:1]),
        measured_trial(3, 128, "none", runs=[24000.0], loss=0.0065, throughput_spread=0.1),
        measured_trial(4, 128, "linear", runs=[25000.0], loss=0.0061),
        measured_trial(6, 64, "none", runs=RUNS[:2], loss=0.0062, repeat_of=0, repeat_index=2),
        measured_trial(7, 64, "none", runs=RUNS, loss=0.0062, repeat_of=0, repeat_index=3),
        measured_trial(
            8, 128, "linear", runs=[17500.0, 16900.0, 18000.0], loss=0.0061, repeat_of=4
        ),
        make_trial(10, 256, "linear", status="oom", error="OOM when allocating"),
    ]


def _window_ci(low: float, high: float) -> dict:
    return {"throughput_ci": [low, high], "throughput_ci_method": "windows of 1 run"}


def rendered(renderable: object, width: int = 80) -> str:
    console = Console(width=width, record=True, file=None)
    with console.capture() as capture:
        console.print(renderable, crop=False)
    return capture.get()


def cells_of(rows: list[list[str]], number: int) -> dict[str, str]:
    (row,) = [r for r in rows if r[0] == str(number)]
    return {header: cell for (header, _), cell in zip(TRIAL_COLUMNS, row, strict=True)}


def test_a_same_as_point_shows_the_one_measurement_it_shares() -> None:
    rows = trial_rows(unique_trials(raced_study()))
    assert [r[0] for r in rows] == ["1", "2", "3", "7", "8", "10"]  # repeats under #7, #8
    linear, original = cells_of(rows, 1), cells_of(rows, 7)
    assert linear["status"] == "ok" and linear["runs"] == "= #7"
    assert linear["note"] == "= #7 (same training)"  # one number for one configuration
    for key in ("samples/s", "95 % CI", "final loss"):  # the configuration's numbers as they stand
        assert linear[key] == original[key]
    assert original["samples/s"] == "17,216" and original["runs"] == "3"
    assert original["95 % CI"] == span_text(decode(raced_study()[6]).result.throughput_ci)
    assert original["note"] == "repeat 3 of #0"  # its other runs are not among the rows


def test_every_row_names_a_configuration_by_its_representative_and_lists_its_runs() -> None:
    study = raced_study()
    rows = trial_rows(unique_trials(study), every=study)
    assert cells_of(rows, 7)["note"] == "runs #0, #6, #7"
    assert cells_of(rows, 8)["note"] == "runs #4, #8"
    assert cells_of(rows, 1)["note"] == "= #7 (same training)"
    every = trial_rows(study, every=study)  # tuner show --all: each run names #7
    assert cells_of(every, 0)["note"] == "run 1 of #7"
    assert cells_of(every, 6)["note"] == "run 2 of #7"
    assert cells_of(every, 4)["note"] == "run 1 of #8"


def test_the_table_at_80_columns_shows_interval_and_runs_and_cuts_no_number() -> None:
    trials = unique_trials(raced_study())
    text = rendered(trials_table(trials, "Study raced", 80))
    assert max(len(line) for line in text.splitlines()) <= 80 and "…" not in text
    for header in ("samples/s", "95 % CI", "runs", "final", "loss"):
        assert header in text
    for trial in trials:
        cells = cells_of(trial_rows(trials), trial.number)
        line = next(ln for ln in text.splitlines() if ln.split("│")[0].strip() == str(trial.number))
        for key in ("samples/s", "final loss", "95 % CI"):
            assert cells[key] in line, (key, line)
    assert "= #7" in text


def test_runs_are_left_out_when_no_configuration_ran_twice_and_wide_shows_them() -> None:
    trials = [measured_trial(0, 64, runs=[1000.0]), measured_trial(1, 128, runs=[1900.0])]
    rows = trial_rows(trials)
    headers = [h for h, _ in TRIAL_COLUMNS]
    assert headers.index("runs") not in trial_layout(rows, 200).columns
    assert headers.index("runs") in trial_layout(rows, 80, wide=True).columns


def test_records_hold_the_new_fields_as_stored() -> None:
    for key in ("same_as", "repeat_of", "repeats", "throughput_ci", "reached_target"):
        assert key in RECORD_FIELDS
    assert {"samples_to_target", "time_to_target_s"} <= set(RECORD_FIELDS)
    same = trial_record(raced_study()[1])
    assert same["same_as"] == 0 and same["repeat_of"] is None and same["repeats"] == RUNS[:1]
    raced = trial_record(raced_study()[6])
    assert raced["repeat_of"] == 0 and raced["repeats"] == RUNS
    assert raced["throughput_ci"] == decode(raced_study()[6]).result.throughput_ci
    reached = trial_record(target_trial(0, 64, times=[10.0, 12.0], samples=4096))
    assert reached["reached_target"] is True and reached["samples_to_target"] == 4096
    assert reached["time_to_target_s"] == 11.0


def test_throughput_points_carry_error_bars_and_the_axis_starts_at_0() -> None:
    trials = raced_study()
    curves = batch_curves(trials, run_recommend(trials))
    by_trial = {p.trial: p for points in curves.by_rule.values() for p in points}
    raced = by_trial[7]  # the representative, not the first run
    low, high = decode(trials[6]).flat["throughput_ci"]
    assert (raced.throughput_low, raced.throughput_high) == (low, high)
    assert raced.error_source == "95 % CI (t over 3 runs)" and raced.runs == 3
    one_run = by_trial[3]  # no interval stored: its windows' spread, ± half of (max − min)
    assert (one_run.throughput_low, one_run.throughput_high) == (22800.0, 25200.0)
    assert one_run.error_source.startswith("window spread of 1 run")
    assert by_trial[1].same_as == 7 and by_trial[1].throughput == raced.throughput
    tops = [max(p.throughput, p.throughput_high or 0.0) for p in by_trial.values()]
    assert curves.throughput_top == pytest.approx(max(tops) * 1.08)  # the highest bar fits


def test_tied_candidates_are_marked() -> None:
    trials = raced_study()
    rec = run_recommend(trials)
    assert rec["trial_number"] == 7 and rec["tied_with"] == [8]
    curves = batch_curves(trials, rec)
    assert curves.recommended is not None and curves.recommended.trial == 7
    assert [p.trial for p in curves.tied] == [8]
    assert batch_curves(trials, {**rec, "tied_with": []}).tied == ()


def test_the_recommendation_prints_interval_runs_tie_tolerance_and_ends_with_the_verdict() -> None:
    trials = raced_study()
    rec = run_recommend(trials)
    rows = recommendation_rows(rec)
    labels = [label for label, _ in rows]
    text = dict(rows)
    assert labels[-1] == "verdict" and text["verdict"] == rec["verdict"]
    assert "median of 3 runs" in text["throughput"]
    assert f"95 % CI {span_text(rec['throughput_ci'])} (t over 3 runs)" in text["throughput"]
    assert text["tie"].startswith("tied with #8; ") and rec["tie_rule"] in text["tie"]
    assert text["loss tolerance"] == "2 % above the best final loss (--tolerance)"
    printed = rendered(recommendation_table(rec))
    assert printed.split()[-1] == rec["verdict"].split()[-1]  # the table ends with the verdict


def test_the_loss_tolerance_says_when_seed_noise_set_it() -> None:
    rec = run_recommend(raced_study())
    noise = {**rec, "loss_tolerance": 0.46, "loss_tolerance_source": "seed noise"}
    text = dict(recommendation_rows({**noise, "seed_loss_spread": 0.23}))["loss tolerance"]
    assert text == (
        "46 % above the best final loss (seed noise: 2 × 23 % seed-to-seed spread, wider than "
        "--tolerance)"
    )
    kept = {**rec, "loss_tolerance_source": "--tolerance", "seed_loss_spread": 0.004}
    assert (
        "seed noise 2 × 0.4 % seed-to-seed spread is smaller"
        in dict(recommendation_rows(kept))["loss tolerance"]
    )


def test_speedup_and_target_rows_carry_their_intervals_and_the_prediction() -> None:
    rec = run_recommend(raced_study())
    rec.update(
        speedup_vs_single_device=0.84,
        speedup_ci=[0.78, 0.90],
        baseline_throughput=20000.0,
        scaling_efficiency=0.42,
        scaling_efficiency_ci=[0.39, 0.45],
        target_loss=0.01,
        time_to_target_s=12.5,
        time_to_target_ci=[11.0, 14.0],
        samples_to_target=40960,
        prediction={
            "noise_scale": 210.0,
            "per_batch": [
                {"global_batch_size": 64, "measured_samples": 40960, "predicted_samples": 39000.0}
            ],
            "agreement": 1.05,
            "fastest_predicted_batch": 128,
            "trust": "Trust it between batch 64 and 128, where it was measured.",
        },
    )
    text = dict(recommendation_rows(rec))
    assert text["vs one device"].startswith("0.84× (95 % CI 0.78–0.90) the single-device")
    assert text["vs one device"].endswith("scaling efficiency 0.42 (0.39–0.45)")
    assert (
        "12.5 s of training to validation loss ≤ 0.01; 95 % CI 11.0 s–14.0 s"
        in text["time to target"]
    )
    assert text["samples to target"] == "40,960; measured at batch 64: 40,960 vs 39,000 predicted"
    assert (
        "median 1.05" in text["prediction"]
        and "fastest predicted global batch 128" in text["prediction"]
    )
    assert text["prediction"].endswith("where it was measured.")
    assert [label for label, _ in recommendation_rows(rec)][-1] == "verdict"


def test_an_old_recommendation_without_the_new_keys_shows_nothing_for_them() -> None:
    rec = run_recommend(raced_study())
    for key in list(rec):
        if key.startswith(
            ("throughput_ci", "tied", "tie_", "loss_tolerance", "seed_", "speedup_ci")
        ):
            del rec[key]
    for key in ("runs", "verdict", "scaling_efficiency_ci", "target_loss", "prediction"):
        rec.pop(key, None)
    text = dict(recommendation_rows(rec))
    assert text["throughput"] == f"{rec['throughput']:,.0f} samples/s"
    for label in ("tie", "verdict", "loss tolerance", "time to target", "prediction"):
        assert label not in text
    old = copy.deepcopy(raced_study()[3])
    old.user_attrs.pop("repeats")
    cells = cells_of(trial_rows([old]), 3)
    assert cells["runs"] == "-" and cells["95 % CI"] == "-" and cells["to target"] == "-"


def target_study() -> list:
    return [
        target_trial(
            0,
            64,
            "none",
            times=[20.0, 22.0, 24.0],
            samples=40960,
            throughput=2000.0,
            repeats=[1.0] * 3,
        ),
        target_trial(1, 128, "none", times=[12.0], samples=51200, throughput=4000.0),
        target_trial(2, 256, "none", times=None, throughput=7000.0),
        target_trial(3, 128, "linear", times=[10.0, 11.0, 13.0], samples=45000, throughput=4100.0),
    ]


def test_time_to_target_numbers_have_intervals_misses_and_the_predicted_curve() -> None:
    trials = target_study()
    assert target_curves(raced_study(), run_recommend(raced_study())) is None  # no target
    rec = {
        "trial_number": 3,
        "lr_rule": "linear",
        "target_loss": 0.01,
        "tied_with": [1],
        "prediction": {
            "per_batch": [
                {"global_batch_size": 64, "measured_samples": 40960, "predicted_samples": 42000.0},
                {"global_batch_size": 128, "measured_samples": 45000, "predicted_samples": 47000.0},
                {"global_batch_size": 512, "measured_samples": None, "predicted_samples": 90000.0},
            ]
        },
    }
    curves = target_curves(trials, rec)
    assert curves is not None and curves.target_loss == 0.01
    none = curves.by_rule["none"]
    assert [(p.global_batch_size, p.seconds) for p in none] == [(64, 22.0), (128, 12.0)]
    assert none[0].low is not None and none[0].low < 22.0 < none[0].high  # t over 3 runs
    assert none[1].low is None  # one run: no interval
    assert curves.missed == {"none": [256]}
    assert curves.recommended is not None and curves.recommended.trial == 3
    assert [p.trial for p in curves.tied] == [1]
    predicted = {p.global_batch_size: p for p in curves.predicted}
    assert predicted[64].seconds == pytest.approx(42000.0 / 2000.0)  # no linear point at 64
    assert predicted[128].seconds == pytest.approx(47000.0 / 4100.0)  # the rule's throughput
    assert predicted[512].seconds is None and predicted[512].samples == 90000.0
    assert curves.top >= 24.0


def test_the_time_to_target_figure_is_drawn_only_with_a_target() -> None:
    from tuner.views.batch_figures import TARGET_PLOT, study_figures
    from tuner.views.style import TIED_TRACE
    from tuner.views.target_figures import MISSED_TRACE, PREDICTED_TRACE

    rec = {
        "trial_number": 3,
        "lr_rule": "linear",
        "target_loss": 0.01,
        "tied_with": [1],
        "prediction": {"per_batch": [{"global_batch_size": 128, "predicted_samples": 47000.0}]},
    }
    figures = study_figures(target_study(), rec)
    figure = figures[TARGET_PLOT]
    names = [trace.name for trace in figure.data]
    assert PREDICTED_TRACE in names and MISSED_TRACE in names
    assert any(name.startswith(TIED_TRACE) for name in names)
    assert "recommended (trial #3)" in names
    assert figure.layout.yaxis.range[0] == 0
    none = next(t for t in figure.data if t.name == "none rule")
    assert none.error_y.array[0] > 0 and none.error_y.arrayminus[0] > 0
    assert "≤ 0.01" in figure.layout.title.text
    assert has_target(target_study(), None) and not has_target(raced_study(), {})


def test_the_throughput_figure_has_error_bars_a_zero_floor_and_rings_the_tie() -> None:
    from tuner.views.batch_figures import batch_figure
    from tuner.views.style import TIED_TRACE

    trials = raced_study()
    curves = batch_curves(trials, run_recommend(trials))
    figure = batch_figure(curves, "throughput")
    assert list(figure.layout.yaxis.range) == [0.0, curves.throughput_top]
    none = next(t for t in figure.data if t.name == "none rule")
    assert none.error_y.array is not None and "95 % CI (t over 3 runs)" in none.text[0]
    (ring,) = [t for t in figure.data if t.name.startswith(TIED_TRACE)]
    assert len(ring.x) == 1
    assert "error bars: 95 % CI over the runs or window spread" in figure.layout.legend.title.text


def test_complete_points_draw_each_configuration_once() -> None:
    points = complete_points(raced_study())
    assert sorted(p.trial for p in points) == [1, 2, 3, 7, 8]


def test_the_report_and_the_note_show_the_tie_and_end_with_the_verdict() -> None:
    from tuner.views.note import study_note
    from tuner.views.report import render_html

    trials = raced_study()
    rec = run_recommend(trials)
    page = render_html("raced", trials, {}, rec, {}, "now")
    body = page.split('<p class="lead" id="recommendation">')[1]
    assert "Tied with #8; within the tie margin" in body.split("</p>")[0]
    verdict = page.index('id="verdict"')
    assert verdict > page.index("<h2>Devices and versions</h2>")  # the page ends with it
    assert page[verdict:].count("<h2>") == 0
    note = study_note("raced", trials, {}, rec, "now")
    assert "**Tie:** tied with #8; " in note and "**Verdict:**" in note
    assert "| 7 | COMPLETE | ok | 64 |" in note  # the representative, not the first run


def test_the_predictions_own_time_is_drawn_when_it_has_one() -> None:
    entry = {"global_batch_size": 64, "predicted_samples": 42000.0}
    rec = {"lr_rule": "none", "prediction": {"per_batch": [entry]}}
    timed = {**rec, "prediction": {"per_batch": [{**entry, "predicted_time_to_target_s": 19.5}]}}
    for given, seconds in ((rec, 42000.0 / 2000.0), (timed, 19.5)):
        curves = target_curves(target_study(), given)
        assert curves is not None and curves.predicted[0].seconds == pytest.approx(seconds)
