"""Trial tables read in any terminal: ``tuner show`` and the end of ``tuner search`` at 80 and
120 columns show every trial's throughput and final loss whole (the columns that do not fit are
left out, never a number cut), ``--wide`` shows every column, ``--format json|csv`` the stored
numbers at full precision.

The fast tests run the app in this process on a study stored in SQLite by hand with numbers made
to be wide; the slow one runs the real command on a study a real search wrote.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import optuna
import pytest
from conftest import run_tuner, tuner_env
from trials import make_trial
from typer.testing import CliRunner

from tuner import results
from tuner.cli.app import app
from tuner.core.record import decode
from tuner.views.summary import TRIAL_COLUMNS, fmt

NOTE = "not launched: a global batch of 65536 already ran out of memory on GPU:0 and GPU:1"


def wide_study(path: Path) -> str:
    """Study ``wide``: numbers as long as they get, every status, a long note. Its URL."""
    url = f"sqlite:///{path / 'wide.db'}"
    study = optuna.create_study(study_name="wide", storage=url, directions=["minimize", "maximize"])
    study.set_user_attr("spec", {"search": {"base_lr": 0.001, "base_batch_size": 64}})
    extra = {"host": "gpu-node-17", "gradient_noise_scale": 98765.4, "goodput": 1234567.8}
    for trial in [
        make_trial(0, 64, "none", loss=0.000123456789, throughput=1234567.891, **extra),
        make_trial(1, 128, "linear", loss=12345.678, throughput=98765.4321, **extra),
        make_trial(2, 256, "sqrt", loss=0.000987654321, throughput=2345678.9, **extra),
        make_trial(3, 512, "sqrt", status="oom-implied", error=NOTE),
        make_trial(4, 512, "linear", status="diverged", error="loss became NaN at step 3"),
        make_trial(5, 32, "none", status="error", error="ValueError: " + "x" * 300),
    ]:
        study.add_trial(trial)
    return url


def finished(url: str, name: str) -> list[optuna.trial.FrozenTrial]:
    trials = optuna.load_study(study_name=name, storage=url).get_trials()
    return [t for t in trials if t.state == optuna.trial.TrialState.COMPLETE]


def show(url: str, name: str, columns: int, *extra: str) -> str:
    result = CliRunner().invoke(
        app, ["show", "--storage", url, "--study-name", name, *extra], env={"COLUMNS": str(columns)}
    )
    assert result.exit_code == 0, result.output
    return result.stdout


def row_cells(text: str, number: int) -> list[str]:
    """The cells of the first line of trial ``number``'s row (a number never wraps, so its whole
    text is there)."""
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.split("│")]
        if len(cells) > 2 and cells[0] == str(number):
            return cells
    raise AssertionError(f"no row for trial {number} in\n{text}")


def assert_numbers_whole(text: str, trials: list[optuna.trial.FrozenTrial]) -> None:
    """Every trial's throughput and final loss is a cell of its row, as the table formats it."""
    # "…" only ends a note clipped at a word boundary (46), never a cut number ("2.31 …" ends a
    # whole one: tuner.core.progress.clipped).
    assert not re.search(r"\d[.,e+-]?…", text), text
    for trial in trials:
        cells = row_cells(text, trial.number)
        assert fmt(trial.values[1], ",.0f") in cells, (trial.number, cells)
        assert fmt(trial.values[0], ".4g") in cells, (trial.number, cells)


@pytest.mark.parametrize("columns", [80, 120])
def test_show_fits_the_page_and_cuts_no_number(tmp_path: Path, columns: int) -> None:
    url = wide_study(tmp_path)
    text = show(url, "wide", columns)
    assert max(len(line) for line in text.splitlines()) <= columns
    assert_numbers_whole(text, finished(url, "wide"))
    table, recommendation = text.split("Recommendation")
    assert "COMPLETE" not in table  # state says what status says
    rec = results.recommendation(optuna.load_study(study_name="wide", storage=url))
    words = recommendation.split()
    assert f"{rec['throughput']:,.0f}" in words and f"{rec['final_loss']:.5g}" in words
    assert "oom-implied" in table.split()


def test_a_wider_page_shows_more_columns(tmp_path: Path) -> None:
    url = wide_study(tmp_path)
    narrow, wide = show(url, "wide", 80), show(url, "wide", 200)
    for header in ("samples/s", "LR", "rule"):  # the first ones in priority
        assert header in narrow and header in wide
    assert "B_noise" not in narrow and "B_noise" in wide
    assert "ValueError:" not in narrow and "ValueError:" in wide  # the note
    assert "gpu-node-17" in show(url, "wide", 260)


def test_wide_shows_every_column_and_still_cuts_no_number(tmp_path: Path) -> None:
    url = wide_study(tmp_path)
    text = show(url, "wide", 80, "--wide")
    header = " ".join(line for line in text.splitlines()[:6] if "┃" in line)
    for name, _ in TRIAL_COLUMNS:
        for word in name.split():
            assert word in header, name
    assert "COMPLETE" in text and "gpu-node-17" in text and "ValueError:" in text
    assert max(len(line) for line in text.split("Recommendation")[0].splitlines()) > 80
    assert_numbers_whole(text, finished(url, "wide"))


def test_json_and_csv_hold_the_stored_numbers_and_nothing_else(tmp_path: Path) -> None:
    url = wide_study(tmp_path)
    stored = {t.number: t for t in optuna.load_study(study_name="wide", storage=url).get_trials()}
    records = json.loads(show(url, "wide", 80, "--format", "json"))
    assert [r["number"] for r in records] == sorted(stored)
    for record in records:
        trial = stored[record["number"]]
        assert record["status"] == decode(trial).status
        assert record["global_batch_size"] == trial.params["global_batch_size"]
        if trial.values:
            assert [record["final_loss"], record["throughput"]] == trial.values
        else:
            assert record["final_loss"] is None and record["throughput"] is None
    assert records[5]["error"] == "ValueError: " + "x" * 300  # whole, not the table's 60
    rows = list(csv.DictReader(io.StringIO(show(url, "wide", 80, "--format", "csv"))))
    assert [int(r["number"]) for r in rows] == sorted(stored)
    assert float(rows[0]["throughput"]) == 1234567.891
    assert float(rows[0]["final_loss"]) == 0.000123456789
    assert rows[3]["error"] == NOTE and rows[3]["throughput"] == ""


def test_an_unknown_format_is_refused_with_the_choices(tmp_path: Path) -> None:
    url = wide_study(tmp_path)
    result = CliRunner().invoke(app, ["show", "--storage", url, "--format", "xml"])
    assert result.exit_code == 2
    assert "table" in result.output and "json" in result.output and "csv" in result.output


@pytest.mark.parametrize("columns", [80, 120])
def test_the_end_of_a_search_fits_the_page(
    tmp_path: Path,
    columns: int,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tuner.cli.search import _print_search
    from tuner.driver.study import SearchReport

    url = wide_study(tmp_path)
    study = optuna.load_study(study_name="wide", storage=url)
    monkeypatch.setenv("COLUMNS", str(columns))
    _print_search(SearchReport(study, launched=6, grid_size=6), None, url)
    text = capsys.readouterr().out
    assert max(len(line) for line in text.splitlines()) <= columns
    assert_numbers_whole(text, finished(url, "wide"))


@pytest.mark.slow
def test_show_of_a_real_search_at_80_and_120_columns(small_study: tuple[Path, str]) -> None:
    work, url = small_study
    trials = finished(f"sqlite:///{work / 'small.db'}", "small")
    assert len(trials) == 6
    for columns in (80, 120):
        env = tuner_env(COLUMNS=str(columns))
        shown = run_tuner("show", "--storage", url, "--study-name", "small", cwd=work, env=env)
        assert shown.returncode == 0, shown.stderr
        assert max(len(line) for line in shown.stdout.splitlines()) <= columns
        assert_numbers_whole(shown.stdout, trials)
    args = ("show", "--storage", url, "--study-name", "small", "--format", "json")
    records = json.loads(run_tuner(*args, cwd=work).stdout)
    by_number = {r["number"]: r for r in records}
    for trial in trials:
        record = by_number[trial.number]
        assert [record["final_loss"], record["throughput"]] == trial.values
        assert record["learning_rate"] == decode(trial).learning_rate


def test_piped_output_is_as_wide_as_columns_says_else_wide(monkeypatch: pytest.MonkeyPatch) -> None:
    from tuner.console.pages import PIPED_WIDTH, PageConsole

    console = PageConsole(file=io.StringIO())  # not a terminal
    monkeypatch.delenv("COLUMNS", raising=False)
    assert console.width == PIPED_WIDTH
    monkeypatch.setenv("COLUMNS", "93")  # read at each print, not when the console was made
    assert console.width == 93
    monkeypatch.setenv("COLUMNS", "wide")
    assert console.width == PIPED_WIDTH


def test_columns_left_out_for_room_are_named_with_wide(tmp_path: Path) -> None:
    url = wide_study(tmp_path)
    args = ["show", "--storage", url, "--study-name", "wide"]
    narrow = CliRunner().invoke(app, args, env={"COLUMNS": "80"})
    assert narrow.exit_code == 0, narrow.output
    # On stderr (stdout keeps the table alone); only columns with something in them: the
    # state, the runs, the precision (the same in every row) and the empty CI are not named.
    hint = [line for line in narrow.stderr.splitlines() if "with --wide" in line]
    assert len(hint) == 1 and hint[0].endswith(
        "6 more columns with --wide: replicas, train loss, B_noise, goodput, host, note"
    ), narrow.stderr
    assert "--wide" not in narrow.stdout
    for extra, columns in (((), "400"), (("--wide",), "80")):
        result = CliRunner().invoke(app, [*args, *extra], env={"COLUMNS": columns})
        assert "with --wide" not in result.stderr, result.stderr
