"""Typos caught in the driver (issue 30): a spec's optimizer, loss and ``module:function``
references are checked without importing TensorFlow or the user's module, each wrong name one
line with the nearest right one; what only running the user's code can tell is left alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tuner.core.errors import ConfigError
from tuner.core.spec import spec_from_dict
from tuner.driver.setup.names import check_names, reference_problem

USER_MODULE = """import tensorflow as tf  # importing it here would cost seconds: never done
from keras import layers

SIZE = 4


def build_model():
    return None


load_data = lambda: None
"""


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "mymodel.py").write_text(USER_MODULE)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "models.py").write_text("def build():\n    return None\n")
    (tmp_path / "lazy.py").write_text("def __getattr__(name):\n    return lambda: None\n")
    (tmp_path / "star.py").write_text("from mymodel import *\n")
    monkeypatch.chdir(tmp_path)  # the child imports from its current directory
    return tmp_path


@pytest.mark.parametrize(
    ("reference", "problem"),
    [
        ("mymodel:build_model", None),
        ("mymodel:load_data", None),  # bound by an assignment
        ("pkg.models:build", None),
        ("lazy:anything", None),  # a module __getattr__: only importing it tells
        ("star:build_model", None),  # a star import: likewise
        (
            "mymodel:build_modle",
            "mymodel.py defines no 'build_modle' at its top level; did "
            "you mean mymodel:build_model?",
        ),
        (
            "mymodl:build_model",
            "no module 'mymodl' (looked in the current directory or the Python path)",
        ),
        ("pkg.modles:build", "no module 'pkg.modles' (looked in pkg)"),
        ("mymodel.sub:build", "'mymodel' is a module, not a package"),
        ("json:dumps", None),  # the standard library and site-packages are the child's too
        ("tuner.workloads.regression:build_model", None),  # an editable install's own finder
        (
            "tuner.workloads.regresion:build_model",
            "no module 'tuner.workloads.regresion' (looked in tuner.workloads)",
        ),
    ],
)
def test_references(workdir: Path, reference: str, problem: str | None) -> None:
    assert reference_problem(reference) == problem


def spec(**workload: str) -> object:
    tables = {
        "study": {"name": "t"},
        "workload": {"model": "mymodel:build_model", "data": "mymodel:load_data", **workload},
        "search": {
            "base_batch_size": 8,
            "batch_multipliers": [1],
            "lr_rules": ["none"],
            "base_lr": 1e-3,
            "epochs": 2,
        },
    }
    return spec_from_dict(tables, source="s.toml")


@pytest.mark.parametrize(
    ("workload", "line"),
    [
        ({"optimizer": "adamm"}, "unknown Keras optimizer 'adamm' in s.toml; did you mean 'adam'?"),
        ({"loss": "Mse"}, "unknown Keras loss 'Mse' in s.toml; did you mean 'mse'?"),
        (
            {"model": "mymodel:buildmodel"},
            "workload.model = 'mymodel:buildmodel' in s.toml: "
            "mymodel.py defines no 'buildmodel' at its top level; "
            "did you mean mymodel:build_model?",
        ),
    ],
)
def test_a_typo_is_one_line(workdir: Path, workload: dict[str, str], line: str) -> None:
    with pytest.raises(ConfigError) as raised:
        check_names(spec(**workload))  # type: ignore[arg-type]
    assert str(raised.value) == line


def test_right_names_and_ones_own_pass(workdir: Path) -> None:
    check_names(spec(optimizer="AdamW", loss="my_pkg>focal"))  # type: ignore[arg-type]


def test_nothing_is_imported(workdir: Path) -> None:
    """The user's module imports TensorFlow; checking its references imports neither."""
    code = (
        "import json, sys\n"
        "from tuner.driver.setup.names import reference_problem\n"
        "print(json.dumps([reference_problem('mymodel:build_model'),\n"
        "    [m for m in ('mymodel', 'tensorflow', 'keras') if m in sys.modules]]))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=workdir)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == [None, []]
