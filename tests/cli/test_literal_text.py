"""The user's own words are printed as written: rich would read ``[bold]`` or ``[/]`` as markup,
Markdown ``[x](y)`` as a link and ``*a*`` as emphasis, HTML ``<b>`` as a tag.

A study is stored in SQLite directly with the attributes tuner stores (no training), under a name
and with trial attributes full of such text; ``show``, ``export`` (the dashboard note) and
``report`` run in this process, the progress lines and the validate table on a recording console.
"""

from __future__ import annotations

import html
import io
import re
from pathlib import Path

import optuna
from conftest import invoke_tuner
from markdown_it import MarkdownIt
from rich.console import Console
from trials import make_trial

from tuner.console.display import print_validation
from tuner.console.progress import SearchProgress
from tuner.core.outcome import TrialOutcome

NAME = "[bold]x[red] [x](y) *a*"
ERROR = "[/] shape [32,1] vs. [red]x <b>"
HOST = "*host* [b]"
MODEL_VALUE = "[x](y)"


def stored_study(tmp_path: Path) -> str:
    """A study named :data:`NAME`: one complete trial (host :data:`HOST`, a hyperparameter
    :data:`MODEL_VALUE`) and one that failed with :data:`ERROR`. Returns its storage URL."""
    url = f"sqlite:///{tmp_path / 'literal.db'}"
    study = optuna.create_study(study_name=NAME, storage=url, directions=["minimize", "maximize"])
    study.set_user_attr(
        "spec",
        {"search": {"base_lr": 0.001, "base_batch_size": 64}, "workload": {"model": "[b]m:f"}},
    )
    study.set_user_attr("device_signatures", ["2x cpu"])
    study.set_user_attr("workload", {"n_train": 4096, "parameters": 10})
    study.add_trial(
        make_trial(
            0,
            64,
            loss=0.5,
            throughput=1000.0,
            host=HOST,
            model_hyperparameters={"units": MODEL_VALUE},
        )
    )
    study.add_trial(make_trial(1, 128, status="error", error=ERROR))
    return url


def table_column(text: str, index: int) -> list[str]:
    """The cells of column ``index`` of a rich table's body (no outer frame), each cell's wrapped
    lines joined."""
    cells: list[list[str]] = []
    for line in text.splitlines():
        parts = line.split("│")
        if len(parts) <= abs(index):
            continue
        if parts[0].strip():  # a new row starts where the first column has text
            cells.append([])
        if cells and parts[index].strip():
            cells[-1].append(parts[index].strip())
    return [" ".join(cell) for cell in cells]


def rendered_text(markdown: str) -> str:
    """What a Markdown renderer (CommonMark with GFM tables, as optuna-dashboard) shows."""
    page = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(markdown)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def test_show_prints_names_and_errors_literally(tmp_path: Path) -> None:
    url = stored_study(tmp_path)
    result = invoke_tuner("show", "--storage", url, "--study-name", NAME, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"Study {NAME}" in result.stdout
    trials = result.stdout.split("Recommendation")[0]
    assert table_column(trials, -1) == ["", ERROR]  # the note column
    assert table_column(trials, -2)[0] == HOST


def test_the_note_and_the_report_show_the_studys_text_literally(tmp_path: Path) -> None:
    from optuna_dashboard import get_note

    url = stored_study(tmp_path)
    exported = invoke_tuner(
        "export", "--storage", url, "--study-name", NAME, "--update-note", cwd=tmp_path
    )
    assert exported.returncode == 0, exported.stderr
    note = get_note(optuna.load_study(study_name=NAME, storage=url))
    shown = rendered_text(note)
    for text in (f"tuner study {NAME}", ERROR, HOST, f"units={MODEL_VALUE}", "[b]m:f"):
        assert text in shown, text

    report = tmp_path / "report.html"
    args = ("--storage", url, "--study-name", NAME, "--output", str(report))
    assert invoke_tuner("report", *args, cwd=tmp_path).returncode == 0
    page = report.read_text()
    assert f"<h1>tuner report: {html.escape(NAME)}</h1>" in page
    for text in (ERROR, HOST, f"units={MODEL_VALUE}"):
        assert re.search(rf"<td[^>]*>{re.escape(html.escape(text))}</td>", page), text


def recording() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, width=200, color_system=None), buffer


def test_progress_lines_print_errors_and_notes_literally() -> None:
    console, buffer = recording()
    progress = SearchProgress(console)
    progress.note(f"the baseline failed (error): {ERROR}")
    progress.trial_finished(3, TrialOutcome("error", error=ERROR))
    lines = buffer.getvalue().splitlines()
    assert lines == [f"  the baseline failed (error): {ERROR}", f"trial 3 · error · {ERROR}"]


def test_the_validate_table_prints_check_summaries_literally() -> None:
    console, buffer = recording()
    check = {"passed": False, "summary": ERROR}
    report = {
        "loop": "fit",
        "update_on": "device",
        "global_batch_size": 64,
        "num_replicas": 2,
        "per_replica_batch_size": 32,
        "steps": 4,
        "learning_rate": 0.001,
        "lr_rule": "none",
        "checks": {"loss_parity": {**check, "compared": False}},
        "passed": False,
    }
    print_validation(console, report)
    assert ERROR in buffer.getvalue()


def test_spec_errors_keep_bracketed_sections_and_values(tmp_path: Path) -> None:
    (tmp_path / "ns.toml").write_text('[bogus]\nx = 1\n[study]\nname = "n"\n')
    result = invoke_tuner("search", "--spec", "ns.toml", cwd=tmp_path)
    assert result.returncode == 2
    assert "unknown section [bogus] in ns.toml" in result.stderr
    (tmp_path / "loop.toml").write_text(
        '[study]\nname = "n"\n[workload]\nmodel = "m:f"\ndata = "m:d"\n'
        '[search]\nbase_batch_size = 64\nbatch_multipliers = [1]\nlr_rules = ["none"]\n'
        'base_lr = 1e-3\nepochs = 2\nloop = "[bold]x[/]"\n'
    )
    result = invoke_tuner("search", "--spec", "loop.toml", cwd=tmp_path)
    assert result.returncode == 2
    assert "'[bold]x[/]'" in result.stderr, result.stderr
