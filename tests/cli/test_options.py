"""The options objects below the CLI: one field per flag, named as the flag with underscores,
defaulting to the flag's default (both read from the Typer commands themselves), and what the
commands hand the library."""

from __future__ import annotations

import dataclasses
import enum
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.core
import typer.main
from conftest import invoke_tuner

from tuner.cli.app import app
from tuner.core.errors import ConfigError
from tuner.core.options import option as row
from tuner.driver import search as driver_search
from tuner.driver.options import ProbeOptions, SearchOptions, ValidateOptions

COMMANDS = {"search": SearchOptions, "probe": ProbeOptions, "validate": ValidateOptions}
DEPRECATED = {"study"}
"""``--study``: the hidden old name of ``--spec``, which the CLI folds into ``spec``."""


def flags(command: str) -> list[typer.core.TyperOption]:
    """The options of ``tuner COMMAND`` as Typer made them, the hidden alias left out."""
    params = typer.main.get_command(app).commands[command].params  # type: ignore[attr-defined]
    return [p for p in params if isinstance(p, typer.core.TyperOption) and p.name not in DEPRECATED]


def field_name(option: typer.core.TyperOption) -> str:
    """``--cpu-replicas`` -> ``cpu_replicas``; ``--baseline/--no-baseline`` -> ``baseline``."""
    long = next(opt for opt in option.opts if opt.startswith("--"))
    return long.removeprefix("--").replace("-", "_")


@pytest.mark.parametrize("command", COMMANDS)
def test_every_flag_is_a_field_named_like_it_and_nothing_else_is(command: str) -> None:
    options = flags(command)
    fields = {field.name for field in dataclasses.fields(COMMANDS[command])}
    named = {field_name(option) for option in options}
    assert named <= fields
    # The other fields are Python's keywords for spec keys the command has no flag for.
    assert all(row(key, command).spec for key in fields - named - {"spec_values"})
    # The command's parameters carry the fields' names too: it passes them on as they are.
    assert all(option.name == field_name(option) for option in options)
    hidden = [p.name for p in flags(command) if p.hidden]
    assert hidden == []


@pytest.mark.parametrize("command", COMMANDS)
def test_every_field_defaults_to_its_flags_default(command: str) -> None:
    built = COMMANDS[command]()
    for option in flags(command):
        default = option.default
        if isinstance(default, enum.Enum):
            default = default.value  # a choice is a plain string below the CLI
        assert getattr(built, field_name(option)) == default, option.opts


@pytest.fixture()
def handed(monkeypatch: pytest.MonkeyPatch) -> list[SearchOptions]:
    """The library's search replaced: it writes down the options it is given, then stops."""
    seen: list[SearchOptions] = []

    def search(options: SearchOptions, front: Any, **kwargs: Any) -> Any:
        seen.append(options)
        raise ConfigError("stopped by the test")

    monkeypatch.setattr(driver_search, "search", search)
    monkeypatch.setattr(driver_search, "follow", lambda options, front: None)  # rank 0 of one
    return seen


def test_the_search_command_hands_its_flags_to_the_library_as_they_are(
    handed: list[SearchOptions], tmp_path: Path
) -> None:
    result = invoke_tuner(
        "search", "--cpu-replicas", "2", "--no-baseline", "--max-repeats", "1", "--backend",
        "jax", "--lr-rules", "sqrt", "--spec", "s.toml", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip() == "error: stopped by the test"
    assert handed == [
        SearchOptions(
            cpu_replicas=2,
            baseline=False,
            max_repeats=1,
            backend="jax",
            lr_rules="sqrt",
            spec=Path("s.toml"),
        )
    ]
    assert type(handed[0].backend) is str


def test_options_set_once_per_study_are_spec_keys_not_flags(tmp_path: Path) -> None:
    for flag in ("--study", "--heartbeat", "--storage-wait", "--tie-margin", "--lr-sweep-full"):
        result = invoke_tuner("search", flag, "1", cwd=tmp_path)
        assert result.returncode == 2 and f"No such option: {flag}" in result.stderr
    overrides = SearchOptions(spec_values={"heartbeat": 0, "tie_margin": 0.1}).spec_overrides()
    assert overrides["search.heartbeat"] == 0 and overrides["search.tie_margin"] == 0.1


def test_lists_come_as_text_from_the_cli_or_as_sequences_from_python() -> None:
    text = SearchOptions(batch_multipliers="1,2", lr_rules="none,sqrt").spec_overrides()
    listed = SearchOptions(batch_multipliers=(1, 2), lr_rules=["none", "sqrt"]).spec_overrides()
    assert text["search.batch_multipliers"] == [1, 2] == list(listed["search.batch_multipliers"])
    assert text["search.lr_rules"] == ["none", "sqrt"] == listed["search.lr_rules"]
    with pytest.raises(ConfigError, match="--batch-multipliers must be comma-separated integers"):
        SearchOptions(batch_multipliers="1,x").spec_overrides()


def test_the_options_and_the_library_search_import_no_typer() -> None:
    code = "import sys, tuner.driver.search; print('typer' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "False", done.stderr
