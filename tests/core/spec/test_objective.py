"""The objective (pure): its direction inferred as Keras and KerasTuner infer it, the spec's
``[workload] objective`` in both forms, ``objective=`` from Python, and the one line of each
mistake."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from tuner.core.errors import ConfigError
from tuner.core.objective import (
    infer_direction,
    is_validation,
    logged_name,
    missing_line,
    parse_objective,
)
from tuner.core.spec import identity_of, spec_from_dict

RAW: dict[str, dict[str, Any]] = {
    "study": {"name": "unit"},
    "workload": {
        "model": "tuner.workloads.regression:build_model",
        "data": "tuner.workloads.regression:load_data",
    },
    "search": {
        "base_batch_size": 64,
        "batch_multipliers": [1, 2],
        "lr_rules": ["none"],
        "base_lr": 1e-3,
        "epochs": 3,
    },
}


def _spec(**workload: Any) -> Any:
    raw = copy.deepcopy(RAW)
    raw["workload"].update(workload)
    return spec_from_dict(raw, source="unit.toml")


@pytest.mark.parametrize(
    ("name", "direction"),
    [
        ("val_loss", "min"),
        ("loss", "min"),
        ("val_mae", "min"),
        ("val_mean_squared_error", "min"),
        ("val_accuracy", "max"),
        ("val_sparse_categorical_accuracy", "max"),
        ("acc", "max"),
        ("val_auc", "max"),
        ("val_precision", "max"),
        ("val_recall", "max"),
        ("val_AUC_1", "max"),
        ("val_reconstruction_loss", "min"),
        ("val_accuracy_loss", "min"),  # a loss, whatever it is named after
    ],
)
def test_the_direction_is_inferred_as_keras_infers_it(name: str, direction: str) -> None:
    assert infer_direction(name) == direction


def test_names_split_into_where_they_are_measured_and_their_log_key() -> None:
    assert (is_validation("val_mae"), logged_name("val_mae")) == (True, "mae")
    assert (is_validation("loss"), logged_name("loss")) == (False, "loss")


def test_the_default_is_the_validation_loss_and_old_studies_keep_their_identity() -> None:
    spec = _spec()
    assert spec.workload.objective == "val_loss"
    stored = spec.to_dict()
    del stored["workload"]["objective"]  # a study stored before objectives could be named
    assert identity_of(stored) == spec.identity()
    assert _spec(objective="val_loss").identity() == spec.identity()
    assert _spec(objective="val_mae").identity() != spec.identity()


@pytest.mark.parametrize(
    "value",
    ["val_mae", {"name": "val_mae"}, {"name": "val_mae", "direction": "min"}, " val_mae "],
)
def test_a_minimized_objective_parses_in_either_form(value: Any) -> None:
    assert _spec(objective=value).workload.objective == "val_mae"
    assert _spec(objective=value).to_dict()["workload"]["objective"] == "val_mae"


def test_a_given_direction_wins_over_the_inferred_one() -> None:
    assert _spec(objective={"name": "val_acc_gap", "direction": "min"}).workload.objective == (
        "val_acc_gap"
    )
    with pytest.raises(ConfigError, match="val_mae is maximized"):
        _spec(objective={"name": "val_mae", "direction": "max"})


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("val_accuracy", "workload.objective in unit.toml: val_accuracy is maximized, and tuner "),
        ({"name": "val_auc"}, "val_auc is maximized"),
        ("mae", "must name a value the evaluation logs with its val_ prefix (val_mae), or the "),
        ("val_", "must name a value the evaluation logs"),
        ("", "must name a value the evaluation logs"),
        (3, "must name a value the evaluation logs"),
        ({"direction": "min"}, 'must be a name ("val_mae") or {name = "val_mae", direction'),
        ({"name": "val_mae", "mode": "min"}, "must be a name"),
        ({"name": "val_mae", "direction": "down"}, "direction must be min or max, got 'down'"),
    ],
)
def test_each_bad_objective_is_one_line(value: Any, says: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(says)) as raised:
        _spec(objective=value)
    assert "\n" not in str(raised.value)


def test_parse_objective_names_its_label() -> None:
    with pytest.raises(ConfigError, match=r"^objective=: val_recall is maximized"):
        parse_objective("val_recall", "objective=")


def test_python_takes_objective_as_a_keyword_of_the_one_table() -> None:
    from tuner.api._search import check_known
    from tuner.core.options import option, spec_only
    from tuner.driver.options import SearchOptions

    assert option("objective").spec == "workload.objective"
    assert "objective" in {row.key for row in spec_only(None)}
    check_known("tuner.search", {"objective": "val_mae"}, SearchOptions, set())
    overrides = SearchOptions(spec_values={"objective": "val_mae"}).spec_overrides()
    assert overrides["workload.objective"] == "val_mae"


@pytest.mark.parametrize(
    ("objective", "reported", "line"),
    [
        (
            "val_loss",
            ["mae"],
            'the evaluation reports mae, not loss: set [workload] objective = "val_mae"',
        ),
        (
            "val_loss",
            ["accuracy", "mae"],
            'the evaluation reports accuracy, mae, not loss: set [workload] objective = "val_mae"',
        ),
        (
            "val_loss",
            ["accuracy"],
            "the evaluation reports accuracy, not loss: set [workload] objective to one of them",
        ),
        ("val_mse", [], "the evaluation reports nothing, not mse: set [workload] objective to"),
        ("loss", ["kl_loss"], "the training reports kl_loss, not loss: set [workload] objective"),
    ],
)
def test_a_missing_objective_lists_what_was_reported(
    objective: str, reported: list[str], line: str
) -> None:
    assert missing_line(objective, reported).startswith(line)
