"""The one line a search says when the user's build compiles its model with another loss or
optimizer than the spec names (issue 28, part 3): from the workload check's ``compile``."""

from __future__ import annotations

from tuner.driver.setup.workload_check import compile_line


def test_no_line_when_the_spec_agrees_or_the_build_does_not_compile() -> None:
    assert compile_line("m:f", None) is None
    assert compile_line("m:f", {"from_build": False, "loss": "mse", "optimizer": "Adam"}) is None
    agreeing = {"from_build": True, "loss": "mse", "optimizer": "Adam", "overrides": {}}
    assert compile_line("m:f", agreeing) is None


def test_one_line_names_what_is_used_instead_of_the_specs_names() -> None:
    described = {
        "from_build": True,
        "loss": "mae",
        "optimizer": "SGD",
        "overrides": {"loss": "mse", "optimizer": "adam"},
    }
    assert compile_line("m:f", described) == (
        "m:f compiles its model: trials train with its loss mae, optimizer SGD, not the spec's "
        "loss 'mse', optimizer 'adam'"
    )


def test_a_custom_class_is_named_with_its_module() -> None:
    described = {
        "from_build": True,
        "loss": {"class": "CustomMSE", "module": "my_model"},
        "optimizer": "Adam",
        "overrides": {"loss": "mse"},
    }
    assert compile_line("m:f", described) == (
        "m:f compiles its model: trials train with its loss CustomMSE (my_model), not the "
        "spec's loss 'mse'"
    )
