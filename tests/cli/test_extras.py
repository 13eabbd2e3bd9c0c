"""Lighter installs (issue 16): optuna-dashboard, plotly and kaleido are extras. A command that
needs a missing one exits 1 with the one install line; a search without them still stores its
trials and says the dashboard note was not written."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import optuna
import pytest
from typer.testing import CliRunner

from tests.trials import write_small_study
from tuner.cli.app import app
from tuner.extras import DISTRIBUTION, EXTRAS, missing_modules, require_extra
from tuner.views.refresh import refresh

ROOT = Path(__file__).resolve().parents[2]


def block(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    """Make ``modules`` unimportable, as on a machine without them."""
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)


def test_the_extras_of_pyproject_bring_the_modules_tuner_checks_for() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == DISTRIBUTION
    base = " ".join(project["dependencies"])
    extras = project["optional-dependencies"]
    for heavy in ("optuna-dashboard", "plotly", "kaleido"):
        assert heavy not in base  # the quickstart install stays light
    assert any("optuna-dashboard" in dep for dep in extras["dashboard"])
    assert any("plotly" in dep for dep in extras["dashboard"])
    assert any("kaleido" in dep for dep in extras["report"])
    assert extras["all"] == [f"{DISTRIBUTION}[dashboard,report,postgres]"]
    assert f"{DISTRIBUTION}[all]" in extras["test"]
    assert set(EXTRAS) == {"dashboard", "report", "png"}


def test_installed_extras_are_found_and_blocked_ones_are_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert not missing_modules("dashboard")
    block(monkeypatch, "plotly")
    assert missing_modules("dashboard") == ["plotly"]
    with pytest.raises(Exception, match=rf"pip install '{DISTRIBUTION}\[report\]'"):
        require_extra("report", "tuner report")


@pytest.mark.parametrize(
    ("args", "blocked", "extra"),
    [
        (["dashboard"], "optuna_dashboard", "dashboard"),
        (["report"], "plotly", "report"),
        (["report", "--format", "png"], "kaleido", "report"),
    ],
    ids=["dashboard", "report", "report-png"],
)
def test_a_missing_extra_is_one_line_and_exit_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], blocked: str, extra: str
) -> None:
    db = write_small_study(tmp_path / "s.db")
    before = db.read_bytes()
    block(monkeypatch, blocked)
    output = tmp_path / "r.html"
    storage = ["--storage", f"sqlite:///{db}"]
    where = ["--output", str(output)] if args[0] == "report" else ["--port", "0"]
    result = CliRunner().invoke(app, [*args, *storage, *where], env={"COLUMNS": "300"})
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: tuner {args[0]}")
    assert f"{blocked}, which is not installed: pip install '{DISTRIBUTION}[{extra}]'" in lines[0]
    assert "Traceback" not in result.output
    assert not output.exists()
    assert db.read_bytes() == before


def test_without_the_dashboard_extra_refresh_writes_nothing_and_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = write_small_study(tmp_path / "s.db")
    study = optuna.load_study(study_name="small", storage=f"sqlite:///{db}")
    block(monkeypatch, "optuna_dashboard")
    warnings: list[str] = []
    refresh(study, warn=warnings.append)
    assert len(warnings) == 1
    assert f"pip install '{DISTRIBUTION}[dashboard]'" in warnings[0]
    assert not _system_attrs(study)
    monkeypatch.undo()  # the same call with the extra installed does write the note
    refresh(study, warn=warnings.append)
    assert _system_attrs(study)
    assert len(warnings) == 1


def _system_attrs(study: optuna.Study) -> dict[str, object]:
    return study._storage.get_study_system_attrs(study._study_id)
