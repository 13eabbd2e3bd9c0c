"""Choosing the columns of a table that fit a page (pure: strings in, indices and widths out)."""

from __future__ import annotations

import csv
import io
import json

from optuna.trial import TrialState
from trials import make_trial

from tuner.views.columns import WRAP_FLOOR, fit_columns, table_width
from tuner.views.records import RECORD_FIELDS, records_text
from tuner.views.summary import TRIAL_COLUMNS, trial_layout, trial_rows

HEADERS = ["#", "status", "global batch", "samples/s", "final loss", "model", "note"]
ROWS = [
    ["0", "ok", "1024", "1,234,568", "0.0001235", "-", ""],
    ["1", "oom-implied", "131072", "-", "-", "-", "ran out of memory at batch 65536 on GPU:0"],
]
PRIORITY = ["#", "status", "global batch", "samples/s", "final loss", "note", "model"]
KEEP = ("#", "status")


def fit(width: int, **kwargs: object) -> tuple[list[str], list[int]]:
    layout = fit_columns(HEADERS, ROWS, width, PRIORITY, {"note", "model"}, KEEP, **kwargs)  # type: ignore[arg-type]
    assert len(layout.columns) == len(layout.widths)
    return [HEADERS[i] for i in layout.columns], layout.widths


def test_every_chosen_number_keeps_its_full_width_and_the_table_fits() -> None:
    for width in range(20, 120):
        shown, widths = fit(width)
        assert shown[:2] == ["#", "status"]
        if table_width(widths) > width:  # only the kept columns may overflow a tiny page
            assert shown == ["#", "status"]
        for header, size in zip(shown, widths, strict=True):
            cells = [row[HEADERS.index(header)] for row in ROWS]
            if header == "note":
                assert size >= WRAP_FLOOR  # wraps, but not into a column of single words
            else:
                assert size >= max(len(cell) for cell in cells)


def test_columns_come_in_priority_order_and_show_in_table_order() -> None:
    before: list[str] = []
    for width in range(20, 120):
        shown, _ = fit(width)
        assert shown == sorted(shown, key=HEADERS.index)
        assert set(before) <= set(shown)  # a wider page only adds columns
        before = shown
    assert fit(47)[0] == ["#", "status", "global batch", "samples/s"]  # 1+11+6+9 and 3 gaps
    assert fit(48)[0] == ["#", "status", "global batch", "samples/s", "final loss"]
    assert fit(74)[0] == fit(48)[0]
    assert fit(75)[0] == [*fit(48)[0], "note"]  # WRAP_FLOOR and a gap


def test_a_column_with_nothing_to_say_is_left_out_unless_wide() -> None:
    assert "model" not in fit(500)[0]  # every cell "-"
    assert "note" in fit(500)[0]
    assert fit(30, wide=True)[0] == HEADERS
    assert "samples/s" not in fit(500, drop=["samples/s"])[0]
    assert fit_columns(["#", "x"], [], 80, ["#", "x"]).columns == [0, 1]  # no rows: headers


def test_headers_unwrap_all_or_none_and_the_free_text_takes_the_rest() -> None:
    shown, widths = fit(500)
    assert widths[shown.index("global batch")] == len("global batch")
    assert widths[shown.index("note")] == len(ROWS[1][-1])
    shown, widths = fit(78)  # room for every column, not for one-line headers (7 more)
    assert shown == ["#", "status", "global batch", "samples/s", "final loss", "note"]
    assert widths[shown.index("global batch")] == len("131072")
    assert widths[shown.index("final loss")] == len("0.0001235")
    assert widths[shown.index("note")] == WRAP_FLOOR + 3
    assert table_width(widths) == 78
    shown, widths = fit(82)
    assert widths[shown.index("global batch")] == len("global batch")
    assert widths[shown.index("final loss")] == len("final loss")
    assert widths[shown.index("note")] == WRAP_FLOOR


def test_wide_shows_every_column_past_the_page_with_numbers_whole() -> None:
    layout = fit_columns(HEADERS, ROWS, 30, PRIORITY, {"note", "model"}, KEEP, wide=True)
    assert layout.columns == list(range(len(HEADERS)))
    assert layout.width > 30
    assert layout.widths[HEADERS.index("samples/s")] == len("samples/s")


def test_the_state_column_shows_only_where_the_status_does_not_imply_it() -> None:
    trials = [
        make_trial(0, 64, loss=0.5, throughput=100.0),
        make_trial(1, 128, status="oom"),
        make_trial(2, 256, status="timeout"),
        make_trial(3, 512, state=TrialState.RUNNING),
    ]
    headers = [h for h, _ in TRIAL_COLUMNS]
    rows = trial_rows(trials)
    shown = [headers[i] for i in trial_layout(rows, 500).columns]
    assert "state" not in shown and "status" in shown
    assert {"note", "model"}.isdisjoint(shown)  # nothing in them
    odd = trial_rows([*trials, make_trial(4, 64, status="error", state=TrialState.PRUNED)])
    assert "state" in [headers[i] for i in trial_layout(odd, 500).columns]
    assert len(trial_layout(rows, 10, wide=True).columns) == len(TRIAL_COLUMNS)


def test_records_keep_the_stored_numbers_at_full_precision() -> None:
    trials = [
        make_trial(1, 128, status="oom", error='out of memory, "quoted"\nand a line'),
        make_trial(0, 64, loss=0.000123456789, throughput=1234567.891, host="a,b"),
    ]
    records = json.loads(records_text(trials, "json"))
    assert [list(r) for r in records] == [RECORD_FIELDS, RECORD_FIELDS]
    ok, oom = records
    assert (ok["number"], ok["final_loss"], ok["throughput"]) == (0, 0.000123456789, 1234567.891)
    assert ok["global_batch_size"] == 64 and isinstance(ok["global_batch_size"], int)
    assert ok["per_replica_batch_size"] == 32 and ok["num_replicas"] == 2
    assert (oom["status"], oom["state"], oom["throughput"]) == ("oom", "PRUNED", None)
    table = list(csv.DictReader(io.StringIO(records_text(trials, "csv"))))
    assert [row["number"] for row in table] == ["0", "1"]
    assert float(table[0]["final_loss"]) == 0.000123456789
    assert float(table[0]["throughput"]) == 1234567.891
    assert table[0]["host"] == "a,b" and table[1]["throughput"] == ""
    assert table[1]["error"] == 'out of memory, "quoted"\nand a line'


def test_a_long_note_is_cut_at_a_word_with_an_ellipsis_never_in_a_number() -> None:
    # 46: the note was sliced to its width, mid-word and without "…" (once "vs 1.841e").
    error = "stopped: its loss 2.3139 is worse than the best rate's at this batch vs 1.841e-03"
    trial = make_trial(1, 128, status="error", state=TrialState.PRUNED, error=error)
    headers = [h for h, _ in TRIAL_COLUMNS]
    (row,) = trial_rows([trial], note_width=72)
    note = row[headers.index("note")]
    assert note.endswith("…") and len(note) <= 72
    assert note[:-1] == error[: len(note) - 1] and error[len(note) - 1] == " "
    assert "1.841e" not in note


def test_the_compiled_metrics_are_a_column_and_a_record_field() -> None:
    # 46: a model's compiled accuracy was never shown.
    measured = make_trial(0, 64, loss=0.1, throughput=900.0, val_metrics={"accuracy": 0.91234})
    plain = make_trial(1, 128, loss=0.2, throughput=1800.0)
    headers = [h for h, _ in TRIAL_COLUMNS]
    rows = trial_rows([measured, plain])
    column = headers.index("val metrics")
    assert [row[column] for row in rows] == ["accuracy=0.9123", "-"]
    assert "val metrics" in [headers[i] for i in trial_layout(rows, 500).columns]
    assert "val metrics" not in [headers[i] for i in trial_layout(rows[1:], 500).columns]
    records = json.loads(records_text([measured, plain], "json"))
    assert [r["val_metrics"] for r in records] == [{"accuracy": 0.91234}, None]
