"""CLI conventions (issue 16): --version, completion, fixed choices as enums listed in --help,
defaults shown one way, --spec (its 0.1.0 alias --study gone), one flag per concept, the
storage's only study by default, and the absolute path of a missing default storage."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from typer.testing import CliRunner

from tests.trials import write_small_study
from tuner import __version__
from tuner.cli import options as choices
from tuner.cli.app import app
from tuner.core.recommend import POLICIES
from tuner.core.scaling import LR_RULES

runner = CliRunner()


def invoke(*args: str, columns: int = 80) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env={"COLUMNS": str(columns)})
    return result.exit_code, result.stdout, result.stderr


def test_version_names_the_package_and_its_pypi_name() -> None:
    code, out, _ = invoke("--version")
    assert code == 0
    assert out.strip() == f"tuner {__version__} (mirrortuner on PyPI)"


def test_shell_completion_completes_commands_and_choices() -> None:
    def complete(words: str, index: int) -> list[str]:
        env = {**os.environ, "_TUNER_COMPLETE": "complete_bash", "COMP_WORDS": words}
        env["COMP_CWORD"] = str(index)
        done = subprocess.run(
            [sys.executable, "-m", "tuner"], env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    # ``python -m tuner`` completes as the program named in COMP_WORDS.
    assert "search" in complete("tuner sea", 1)
    assert complete("tuner probe --loop ", 3) == ["fit", "custom"]


@pytest.mark.parametrize(
    ("enum", "core"),
    [
        (choices.Policy, POLICIES),
    ],
)
def test_every_choice_enum_is_the_cores_tuple(enum: type, core: tuple[str, ...]) -> None:
    assert tuple(member.value for member in enum) == tuple(core)


def test_help_lists_the_choices_and_shows_spec_defaults_one_way() -> None:
    code, out, _ = invoke("search", "--help")
    assert code == 0
    flat = " ".join(out.split())
    assert "--backend <tensorflow|jax>" in flat
    assert ", ".join(LR_RULES) in flat  # all five rules, not only the first three
    for shown in ("spec, else 64", "spec, else 0.001", "spec, else tensorflow", "spec, else on"):
        assert f"[default: ({shown})]" in flat
    assert "…" not in out  # nothing cut at 80 columns
    assert max(map(len, out.splitlines())) <= 80
    _, validate_help, _ = invoke("validate", "--help")
    assert f"<{'|'.join(LR_RULES)}>" in " ".join(validate_help.split())


def test_a_value_outside_the_choices_is_refused_with_the_list() -> None:
    code, _, err = invoke("validate", "--loop", "fitt")
    assert code == 2
    assert "'fitt' is not one of 'fit', 'custom'" in " ".join(err.split())


def test_an_unknown_rule_in_the_list_is_refused_before_a_child(tmp_path: Path) -> None:
    # Both spellings reach the same check (an unknown rule in the list), before any child.
    for flag in ("--lr-rules",):
        code, _, err = invoke(
            "search", flag, "none,cubic", "--storage", f"sqlite:///{tmp_path}/x.db"
        )
        assert code == 2, err
        assert "cubic" in err
    assert not (tmp_path / "x.db").exists()


def test_the_spec_is_named_by_spec_only(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    code, _, err = invoke("validate", "--study", str(missing))  # 0.1.0's alias is gone
    assert code == 2 and "No such option: --study" in err
    code, _, err = invoke("validate", "--spec", str(missing))
    assert code == 2 and f"spec file {missing} does not exist" in err


def test_read_commands_default_to_the_only_study(tmp_path: Path) -> None:
    db = write_small_study(tmp_path / "one.db")
    code, out, err = invoke("show", "--storage", f"sqlite:///{db}", columns=200)
    assert code == 0, err
    assert "Study small" in out
    code, out, err = invoke("export", "--storage", f"sqlite:///{db}")
    assert code == 0, err
    assert '"study_name": "small"' in out


def test_several_studies_are_listed_and_one_is_asked_for(tmp_path: Path) -> None:
    db = write_small_study(tmp_path / "two.db")
    optuna.create_study(study_name="other", storage=f"sqlite:///{db}")
    before = db.read_bytes()
    for command in ("show", "export", "report"):
        code, _, err = invoke(command, "--storage", f"sqlite:///{db}")
        assert code == 2, (command, err)
        assert "holds 2 studies (other, small); pick one with --study-name" in err
    assert db.read_bytes() == before


def test_a_storage_without_a_study_says_to_search_first(tmp_path: Path) -> None:
    db = tmp_path / "empty.db"
    optuna.create_study(study_name="gone", storage=f"sqlite:///{db}")
    optuna.delete_study(study_name="gone", storage=f"sqlite:///{db}")
    code, _, err = invoke("show", "--storage", f"sqlite:///{db}")
    assert code == 2
    assert "holds no study yet; run `tuner search` first" in err


def test_a_missing_default_storage_names_the_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TUNER_STORAGE", raising=False)
    code, _, err = invoke("show", columns=300)
    assert code == 2
    assert f"(looked for {tmp_path / 'studies' / 'tuner.db'})" in err
    assert len(err.strip().splitlines()) == 1
