"""Unit tests of the study spec (pure): the built-in spec, CLI overrides and every validation
error. Reading TOML files is tested in tests/driver/test_spec_file.py."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from tuner.core.errors import ConfigError
from tuner.core.spec import (
    BUILTIN_SOURCE,
    SearchSpec,
    StudySpec,
    WorkloadSpec,
    identity_of,
    spec_from_dict,
)
from tuner.core.spec._fields import parse_int_list, parse_name_list

VALID: dict[str, dict[str, Any]] = {
    "study": {"name": "unit"},
    "workload": {
        "model": "tuner.workloads.regression:build_model",
        "data": "tuner.workloads.regression:load_data",
        "loss": "mse",
        "optimizer": "adam",
    },
    "search": {
        "base_batch_size": 64,
        "batch_multipliers": [1, 2],
        "lr_rules": ["none", "linear", "sqrt"],
        "base_lr": 1e-3,
        "epochs": 3,
    },
}

_DROP = object()
SOURCE = "unit.toml"


def spec_data(section: str | None = None, key: str | None = None, value: Any = None):
    """A copy of VALID with ``section.key`` set to ``value`` (``_DROP``: removed)."""
    data = copy.deepcopy(VALID)
    if section is not None and key is not None:
        table = data.setdefault(section, {})
        if value is _DROP:
            del table[key]
        else:
            table[key] = value
    return data


def build(data: dict[str, Any], overrides: dict[str, Any] | None = None) -> StudySpec:
    return spec_from_dict(data, overrides, source=SOURCE)


# --- loading -----------------------------------------------------------------------------------


def test_builtin_values() -> None:
    spec = spec_from_dict()
    assert spec.name == "regression"
    assert spec.workload == WorkloadSpec(
        model="tuner.workloads.regression:build_model",
        data="tuner.workloads.regression:load_data",
        loss="mse",
        optimizer="adam",
    )
    assert spec.search == SearchSpec.from_flat(
        dict(
            base_batch_size=64,
            batch_multipliers=(1, 2),
            lr_rules=("none", "linear", "sqrt"),
            base_lr=1e-3,
            epochs=3,
            seed=0,
        )
    )
    assert spec.search.grid.global_batch_sizes == (64, 128)
    assert spec.source == BUILTIN_SOURCE


def test_optional_fields_default() -> None:
    data = copy.deepcopy(VALID)
    del data["workload"]["loss"]
    del data["workload"]["optimizer"]
    spec = build(data)
    # Left to the build's compile (the workload check refuses an uncompiled build without them).
    assert spec.workload.loss is None
    assert spec.workload.optimizer is None
    assert spec.search.run.seed == 0


def test_global_batch_sizes_sorted() -> None:
    spec = build(spec_data("search", "batch_multipliers", [4, 1, 2]))
    assert spec.search.grid.batch_multipliers == (4, 1, 2)
    assert spec.search.grid.global_batch_sizes == (64, 128, 256)


def test_the_stored_spec_is_plain_data_that_rebuilds_it_and_resumes_its_study() -> None:
    spec = build(
        spec_data("search", "batch_multipliers", [4, 1, 2]),
        {"search.seed": 5, "search.base_lr": 0.01, "search.lr_rules": ["sqrt", "none"]},
    )
    stored = json.loads(json.dumps(spec.to_dict()))  # as the study keeps it
    assert "source" not in stored
    tables = {"study": {"name": stored["name"]}}
    for section in ("workload", "search"):  # a field left at None was not given
        tables[section] = {k: v for k, v in stored[section].items() if v is not None}
    assert build(tables) == spec
    assert identity_of(stored) == spec.identity()  # the same spec resumes its study


# A change to any of these is another study: resuming with it is refused (identity differs).
RESUME_MUST_MATCH = [
    ("workload.model", "pkg.other:build"),
    ("workload.data", "pkg.other:load"),
    ("workload.loss", "mae"),
    ("workload.optimizer", "sgd"),
    ("workload.backend", "jax"),
    ("search.base_batch_size", 32),
    ("search.batch_multipliers", [1, 4]),
    ("search.lr_rules", ["sqrt"]),
    ("search.base_lr", 0.01),
    ("search.epochs", 5),
    ("search.train_samples", 1000),
    ("search.seed", 3),
    ("search.precisions", ["float32", "mixed_float16"]),
    ("search.noise_scale", False),
    ("search.warmup_epochs", 0.5),
    ("search.model_hyperparameters", "search"),
]


@pytest.mark.parametrize(("key", "value"), RESUME_MUST_MATCH)
def test_a_changed_workload_or_grid_is_another_study(key: str, value: Any) -> None:
    base = spec_from_dict()
    changed = spec_from_dict(overrides={key: value})
    assert changed.identity() != base.identity()


def test_identity_ignores_the_trial_budget_and_fills_new_fields() -> None:
    spec = spec_from_dict(overrides={"search.trials": 7})
    old = spec.to_dict()
    del old["search"]["model_hyperparameters"]  # stored before the field existed
    old["search"]["trials"] = 50
    assert identity_of(old) == spec.identity()
    searched = spec_from_dict(overrides={"search.model_hyperparameters": "search"})
    assert searched.identity() != spec.identity()


def test_model_hyperparameters_and_trials_are_validated() -> None:
    with pytest.raises(
        ConfigError, match="--model-hyperparameters must be one of defaults, search"
    ):
        spec_from_dict(overrides={"search.model_hyperparameters": "grid"})
    with pytest.raises(ConfigError, match="--trials must be a positive integer"):
        spec_from_dict(overrides={"search.trials": 0})


def test_identity_ignores_name_but_not_grid() -> None:
    renamed = build(spec_data("study", "name", "other"))
    base = build(spec_data())
    assert renamed.identity() == base.identity()
    wider = build(spec_data("search", "batch_multipliers", [1, 2, 4]))
    assert wider.identity() != base.identity()


# --- overrides ---------------------------------------------------------------------------------


def test_cli_overrides_apply() -> None:
    spec = spec_from_dict(
        None,
        {
            "search.base_batch_size": 32,
            "search.batch_multipliers": [1, 4],
            "search.lr_rules": ["sqrt"],
            "search.base_lr": 0.01,
            "search.epochs": 5,
        },
    )
    assert spec.search.grid.base_batch_size == 32
    assert spec.search.grid.batch_multipliers == (1, 4)
    assert spec.search.grid.global_batch_sizes == (32, 128)
    assert spec.search.grid.lr_rules == ("sqrt",)
    assert spec.search.grid.base_lr == 0.01
    assert spec.search.run.epochs == 5
    assert spec.name == "regression"


def test_none_overrides_are_ignored() -> None:
    spec = spec_from_dict(None, {"search.epochs": None, "search.base_lr": None})
    assert spec == spec_from_dict()


def test_overrides_apply_to_given_tables_without_changing_them() -> None:
    data = spec_data()
    spec = build(data, {"search.epochs": 7})
    assert spec.search.run.epochs == 7
    assert spec.name == "unit"
    assert spec.source == SOURCE
    assert data == VALID


def test_overrides_do_not_leak_into_builtin() -> None:
    spec_from_dict(None, {"search.epochs": 9, "search.lr_rules": ["linear"]})
    spec = spec_from_dict()
    assert spec.search.run.epochs == 3
    assert spec.search.grid.lr_rules == ("none", "linear", "sqrt")


@pytest.mark.parametrize(
    ("key", "value", "flag"),
    [
        ("search.epochs", 1, "--epochs"),
        ("search.base_batch_size", 0, "--base-batch-size"),
        ("search.base_lr", -0.1, "--base-lr"),
        ("search.batch_multipliers", [1, 1], "--batch-multipliers"),
        ("search.lr_rules", ["cubic"], "--lr-rules"),
    ],
)
def test_override_errors_name_the_flag(key: str, value: Any, flag: str) -> None:
    with pytest.raises(ConfigError, match=flag):
        spec_from_dict(None, {key: value})


def test_negative_multiplier_from_cli() -> None:
    multipliers = parse_int_list("1,-2", "--batch-multipliers")
    assert multipliers == [1, -2]
    with pytest.raises(ConfigError, match="--batch-multipliers must be a positive integer, got -2"):
        spec_from_dict(None, {"search.batch_multipliers": multipliers})


def test_unknown_section() -> None:
    data = copy.deepcopy(VALID)
    data["training"] = {"epochs": 3}
    with pytest.raises(ConfigError, match=r"unknown section \[training\]") as info:
        build(data)
    assert SOURCE in str(info.value)
    assert "study, workload, search" in str(info.value)


def test_section_must_be_a_table() -> None:
    data: dict[str, Any] = copy.deepcopy(VALID)
    data["study"] = "x"
    with pytest.raises(ConfigError, match=r"\[study\] .* must be a table"):
        build(data)


@pytest.mark.parametrize(
    ("section", "key"),
    [("search", "batch_size"), ("workload", "metrics"), ("study", "title")],
)
def test_unknown_key(section: str, key: str) -> None:
    with pytest.raises(ConfigError, match=f"unknown key {section}.{key}"):
        build(spec_data(section, key, 1))


@pytest.mark.parametrize(
    ("section", "key", "hint"),
    [
        ("search", "batch_multiplier", "did you mean search.batch_multipliers?"),
        ("search", "lr_rule", "did you mean search.lr_rules?"),
        ("workload", "optimiser", "did you mean workload.optimizer?"),
        ("study", "title", "known keys of [study]: name"),  # close to none: all are listed
    ],
)
def test_an_unknown_key_suggests_the_nearest(section: str, key: str, hint: str) -> None:
    with pytest.raises(ConfigError) as raised:
        build(spec_data(section, key, 1))
    line = str(raised.value)
    assert line.startswith(f"unknown key {section}.{key} in ") and line.endswith(f"; {hint}")


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ("study", "name"),
        ("workload", "model"),
        ("search", "base_batch_size"),
        ("search", "batch_multipliers"),
        ("search", "lr_rules"),
        ("search", "base_lr"),
    ],
)
def test_missing_required_key(section: str, key: str) -> None:
    with pytest.raises(ConfigError, match=f"{section}.{key} is missing"):
        build(spec_data(section, key, _DROP))


@pytest.mark.parametrize(
    ("section", "first", "second", "value"),
    [
        ("workload", "data", "dataset", "pkg.mod:dataset"),
        ("search", "epochs", "train_samples", 20_000),
    ],
)
def test_exactly_one_of_each_pair(section: str, first: str, second: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=rf"\[{section}\].* exactly one of {first} .* neither"):
        build(spec_data(section, first, _DROP))
    both = spec_data(section, second, value)
    with pytest.raises(ConfigError, match=rf"exactly one of {first} .* both are given"):
        build(both)
    alone = spec_data(section, first, _DROP)
    alone[section][second] = value
    spec = build(alone)
    assert spec.to_dict()[section][second] == value  # the flat keys, as stored
    assert spec.to_dict()[section][first] is None


def test_a_budget_flag_replaces_the_specs_other_budget() -> None:
    by_samples = spec_from_dict(None, {"search.train_samples": 50_000})
    assert (by_samples.search.run.epochs, by_samples.search.run.train_samples) == (None, 50_000)
    raw = {**VALID, "search": {**VALID["search"], "train_samples": 1000}}
    raw["search"].pop("epochs")
    by_epochs = spec_from_dict(raw, {"search.epochs": 4})
    assert (by_epochs.search.run.epochs, by_epochs.search.run.train_samples) == (4, None)


def test_warmup_epochs_needs_epochs() -> None:
    raw = {**VALID, "search": {**VALID["search"], "train_samples": 1000, "warmup_epochs": 0.5}}
    raw["search"].pop("epochs")
    with pytest.raises(ConfigError, match=r"warmup_epochs .* needs epochs; with train_samples"):
        build(raw)


# --- field errors: each names its field ---------------------------------------------------------

FIELD_ERRORS = [
    # wrong types for integers
    ("search", "base_batch_size", "64", "positive integer"),
    ("search", "base_batch_size", True, "positive integer"),
    ("search", "base_batch_size", 64.0, "positive integer"),
    ("search", "epochs", "3", "positive integer"),
    ("search", "epochs", True, "positive integer"),
    ("search", "epochs", 3.0, "positive integer"),
    # zero / negative batch
    ("search", "base_batch_size", 0, "positive integer"),
    ("search", "base_batch_size", -64, "positive integer"),
    # epochs
    ("search", "epochs", 0, "positive integer"),
    ("search", "epochs", 1, "at least 2"),
    # multipliers
    ("search", "batch_multipliers", [1, 2, 2], "lists 2 more than once"),
    ("search", "batch_multipliers", [], "non-empty list"),
    ("search", "batch_multipliers", 2, "non-empty list"),
    ("search", "batch_multipliers", [1, 0], "positive integer"),
    ("search", "batch_multipliers", [1, 2.0], "positive integer"),
    ("search", "batch_multipliers", [1, True], "positive integer"),
    # rules
    ("search", "lr_rules", ["none", "cubic"], "unknown learning-rate rule 'cubic'"),
    ("search", "lr_rules", ["none", "sqrt", "none"], "more than once"),
    ("search", "lr_rules", [], "non-empty list"),
    ("search", "lr_rules", "linear", "non-empty list"),
    ("search", "lr_rules", ["none", 1], "non-empty string"),
    # base_lr
    ("search", "base_lr", 0, "positive number"),
    ("search", "base_lr", 0.0, "positive number"),
    ("search", "base_lr", -1e-3, "positive number"),
    ("search", "base_lr", float("nan"), "positive number"),
    ("search", "base_lr", float("inf"), "positive number"),
    ("search", "base_lr", "0.001", "positive number"),
    ("search", "base_lr", True, "positive number"),
    # seed
    ("search", "seed", -1, "non-negative integer"),
    ("search", "seed", "0", "non-negative integer"),
    ("search", "seed", True, "non-negative integer"),
    # how sure a decision must be
    ("search", "seeds", 0, "positive integer"),
    ("search", "seeds", 2.0, "positive integer"),
    ("search", "max_repeats", 0, "positive integer"),
    ("search", "tolerance", 1.0, "in [0, 1)"),
    ("search", "tolerance", -0.1, "in [0, 1)"),
    ("search", "tolerance", "2%", "finite number"),
    ("search", "target_loss", float("nan"), "finite number"),
    ("search", "target_loss", "0.01", "finite number"),
    # references
    ("workload", "model", "tuner.workloads.regression.build_model", "module:function"),
    ("workload", "model", "tuner.workloads.regression:", "module:function"),
    ("workload", "model", ":build_model", "module:function"),
    ("workload", "model", "a:b:c", "module:function"),
    ("workload", "data", "load data", "module:function"),
    ("workload", "model", 3, "non-empty string"),
    ("workload", "loss", "", "non-empty string"),
    ("workload", "optimizer", "   ", "non-empty string"),
    # name
    ("study", "name", "my study", "letters, digits"),
    ("study", "name", "a/b", "letters, digits"),
    ("study", "name", "", "non-empty string"),
    ("study", "name", 7, "non-empty string"),
]


@pytest.mark.parametrize(("section", "key", "value", "fragment"), FIELD_ERRORS)
def test_field_errors_name_the_field(section: str, key: str, value: Any, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        build(spec_data(section, key, value))
    message = str(info.value)
    assert f"{section}.{key} in {SOURCE}" in message
    assert fragment in message


def test_nan_base_lr_override_rejected() -> None:
    with pytest.raises(ConfigError, match="--base-lr must be a positive number"):
        spec_from_dict(None, {"search.base_lr": float("nan")})


def test_valid_edge_values() -> None:
    data = copy.deepcopy(VALID)
    data["study"]["name"] = "My_study-2.v1"
    data["search"]["epochs"] = 2
    data["search"]["base_lr"] = 1
    data["search"]["seed"] = 0
    data["workload"]["model"] = "pkg_1.sub.mod:build_2"
    spec = build(data)
    assert spec.name == "My_study-2.v1"
    assert spec.search.run.epochs == 2
    assert spec.search.grid.base_lr == 1.0
    assert isinstance(spec.search.grid.base_lr, float)
    assert spec.workload.model == "pkg_1.sub.mod:build_2"


def test_spec_is_frozen() -> None:
    spec = spec_from_dict()
    with pytest.raises(AttributeError):
        spec.name = "other"  # type: ignore[misc]


# --- CLI list parsing --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"), [("1,2,4", [1, 2, 4]), (" 1 , 2 ", [1, 2]), ("8", [8])]
)
def test_parse_int_list(text: str, expected: list[int]) -> None:
    assert parse_int_list(text, "--batch-multipliers") == expected


@pytest.mark.parametrize("text", ["1,,2", "a", "", "  ", "1,", ",1", "1.5", "1;2"])
def test_parse_int_list_errors(text: str) -> None:
    with pytest.raises(ConfigError, match="--batch-multipliers must be comma-separated integers"):
        parse_int_list(text, "--batch-multipliers")


@pytest.mark.parametrize(
    ("text", "expected"),
    [("none,linear", ["none", "linear"]), (" sqrt , none ", ["sqrt", "none"]), ("a", ["a"])],
)
def test_parse_name_list(text: str, expected: list[str]) -> None:
    assert parse_name_list(text, "--lr-rules") == expected


@pytest.mark.parametrize("text", ["1,,2", "none,,sqrt", "", " ", ",", "none,"])
def test_parse_name_list_errors(text: str) -> None:
    with pytest.raises(ConfigError, match="--lr-rules must be comma-separated names"):
        parse_name_list(text, "--lr-rules")


def test_section_not_a_table_with_an_override() -> None:
    data: dict[str, Any] = copy.deepcopy(VALID)
    data["search"] = 1
    with pytest.raises(ConfigError, match=r"\[search\] .* must be a table"):
        build(data, {"search.epochs": 3})


def test_sqrt_adam_needs_adam_and_ratios_its_betas_survive() -> None:
    with pytest.raises(ConfigError, match="rescales Adam's moments, but the optimizer is 'sgd'"):
        spec_from_dict(
            overrides={"workload.optimizer": "sgd", "search.lr_rules": ["none", "sqrt-adam"]}
        )
    with pytest.raises(ConfigError, match="at 16x the base batch gives beta_1"):
        spec_from_dict(
            overrides={"search.lr_rules": ["sqrt-adam"], "search.batch_multipliers": [1, 16]}
        )
    spec = spec_from_dict(overrides={"search.lr_rules": ["sqrt-adam", "linear-warmup"]})
    assert spec.search.grid.lr_rules == ("sqrt-adam", "linear-warmup")


def test_noise_scale_and_warmup_fields() -> None:
    spec = spec_from_dict()
    assert (spec.search.run.noise_scale, spec.search.run.noise_scale_steps) == (True, None)
    assert (spec.search.run.warmup_epochs, spec.search.run.warmup_steps) == (1.0, None)
    with pytest.raises(ConfigError, match="warmup-epochs must be more than 0 and less than"):
        spec_from_dict(overrides={"search.warmup_epochs": 3})
    with pytest.raises(ConfigError, match="noise-scale must be true or false"):
        spec_from_dict(overrides={"search.noise_scale": "yes"})


def test_decision_fields_default_to_three_seeds_three_repeats_and_no_target() -> None:
    search = spec_from_dict().search
    decision = search.decision
    assert (decision.seeds, decision.max_repeats, decision.tolerance) == (3, 3, 0.02)
    assert (search.run.target_loss, search.run.eval_every_samples) == (None, None)
    search = spec_from_dict(
        overrides={"search.target_loss": 0.5, "search.eval_every_samples": 1024}
    ).search
    assert (search.run.target_loss, search.run.eval_every_samples) == (0.5, 1024)
    with pytest.raises(ConfigError, match=r"--eval-every-samples sets how often .* target_loss"):
        spec_from_dict(overrides={"search.eval_every_samples": 1024})


def test_seeds_repeats_and_tolerance_may_change_on_resume_but_the_target_may_not() -> None:
    base = spec_from_dict()
    changed = spec_from_dict(
        overrides={"search.seeds": 1, "search.max_repeats": 5, "search.tolerance": 0.1}
    )
    assert changed.identity() == base.identity()
    assert spec_from_dict(overrides={"search.target_loss": 0.5}).identity() != base.identity()


def test_tie_margin_is_a_fraction_that_may_change_on_resume() -> None:
    assert build(spec_data("search", "tie_margin", 0.1)).search.decision.tie_margin == 0.1
    assert build(VALID).search.decision.tie_margin == 0.05
    with pytest.raises(ConfigError, match=r"tie_margin .*must be in \[0, 1\), got 1.5"):
        build(spec_data("search", "tie_margin", 1.5))
    changed = build(spec_data("search", "tie_margin", 0.2)).identity()
    assert changed == build(VALID).identity()
