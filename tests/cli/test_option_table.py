"""The options table (``tuner/core/options.py``) is the one declaration of each option: the
commands' flags, the options dataclasses and ``tuner.search``'s keywords agree with it."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest
import typer

from tuner.cli.app import app
from tuner.core.errors import ConfigError
from tuner.core.options import OPTIONS, option, options_of, spec_only
from tuner.driver.lr_find import LrFindOptions
from tuner.driver.options import ProbeOptions, SearchOptions, SpecOptions, ValidateOptions

BUILTIN = ("base_batch_size", "batch_multipliers", "lr_rules", "base_lr", "epochs")
KINDS: dict[str, type[SpecOptions]] = {
    "search": SearchOptions,
    "probe": ProbeOptions,
    "validate": ValidateOptions,
    "lr-find": LrFindOptions,
}


@pytest.mark.parametrize("command", sorted(KINDS))
def test_flags_fields_and_defaults_come_from_the_table(command: str) -> None:
    group = typer.main.get_command(app)
    params = group.commands[command].params  # type: ignore[attr-defined]
    flags = {param.name for param in params if param.name != "help"}
    assert flags == {row.key for row in options_of(command)}
    fields = {field.name: field for field in dataclasses.fields(KINDS[command])}
    fields.pop("spec_values", None)  # SearchOptions's spec-only keys: one mapping, no row
    assert flags <= fields.keys()
    for key, field in fields.items():
        assert field.default == option(key, command).default, f"{command} {key}"


def test_search_takes_the_spec_only_keys_as_keywords_and_has_at_most_28_flags() -> None:
    from tuner.api._search import check_known

    fields = {field.name for field in dataclasses.fields(SearchOptions)}
    keys = {row.key for row in spec_only()}
    assert not keys & fields  # one mapping of them (spec_values), not a field each
    check_known("tuner.search", dict.fromkeys(keys, 1), SearchOptions, set())  # keywords
    overrides = SearchOptions(spec_values=dict.fromkeys(keys, 1)).spec_overrides()
    assert {f"search.{key}" for key in keys} <= overrides.keys()
    with pytest.raises(ConfigError, match=re.escape("lr_rule is no [search] key set in the")):
        SearchOptions(spec_values={"lr_rule": 1}).spec_overrides()
    assert len(options_of("search")) <= 28


def test_every_spec_key_of_the_table_is_one_the_spec_accepts() -> None:
    from tuner.core.spec._parse import SECTION_KEYS

    for row in OPTIONS:
        if row.spec is not None:
            section, key = row.spec.split(".")
            assert key in SECTION_KEYS[section], row.spec


@pytest.mark.parametrize(
    ("search", "line"),
    [
        ({"heartbeat": float("nan")}, "search.heartbeat in t must be 0 or a positive number"),
        ({"storage_wait": -1}, "search.storage_wait in t must be 0 or a positive number"),
        ({"tolerance": 1}, "search.tolerance in t must be in [0, 1)"),
        ({"eval_every_samples": 1024}, "give a target_loss"),
    ],
)
def test_the_options_moved_to_the_spec_are_checked_there(search: dict[str, Any], line: str) -> None:
    from tuner.core.spec import spec_from_dict

    tables = spec_from_dict().to_dict()
    tables["study"] = {"name": tables.pop("name")}
    tables["search"] = {key: tables["search"][key] for key in BUILTIN} | search
    with pytest.raises(ConfigError, match=re.escape(line)):
        spec_from_dict(tables, source="t")
