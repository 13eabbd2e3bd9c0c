"""The refusal to resume a study under another spec names what the user wrote (issue 46: a
README reader whose notebook and TOML shared a study name was told of the internal
``tuner_shipped:load_data``)."""

from __future__ import annotations

import re
from pathlib import Path

from tuner.core.spec import SHIPPED_MODULE, shown_reference
from tuner.driver.setup.opening import _first_difference

README = Path(__file__).resolve().parents[2] / "README.md"


def test_a_shipped_function_is_named_as_the_users_function() -> None:
    old = {"workload": {"data": f"{SHIPPED_MODULE}:load_data", "loss": "mse"}}
    new = {"workload": {"data": "mymodel:load_data", "loss": "mse"}}
    text = _first_difference(old, new)
    assert text == (
        "workload.data: stored load_data (a function given to tuner.search), "
        "now 'mymodel:load_data'"
    )
    assert SHIPPED_MODULE not in text
    assert shown_reference(3) == "3" and shown_reference("m:f") == "'m:f'"


def test_the_readmes_python_and_toml_searches_are_different_studies() -> None:
    text = README.read_text(encoding="utf-8")
    (python,) = re.findall(r'study_name="([^"]+)"', text)
    toml = re.findall(r'^\[study\]\nname = "([^"]+)"', text, re.M)
    assert toml and python not in toml
