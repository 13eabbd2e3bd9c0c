"""tuner.search's functions as references (tuner.api._functions): an importable function by
name; what no child can import (``__main__``, a lambda, a nested function, an object) shipped
by value and imported back by a fresh process from the study's folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tuner.api._functions import SHIPPED_MODULE, Shipment
from tuner.core.errors import ConfigError
from tuner.workloads import regression


def test_an_importable_function_is_named_not_shipped(tmp_path: Path) -> None:
    shipment = Shipment(tmp_path)
    assert shipment.reference(regression.build_model, "model") == (
        "tuner.workloads.regression:build_model"
    )
    assert shipment.reference("mymodel:build", "model") == "mymodel:build"  # the spec checks it
    assert shipment.shipped == []


def make_nested() -> Any:
    scale = np.float32(3.0)

    def load_data() -> Any:  # a closure over a local: only its value can travel
        x = np.arange(6, dtype=np.float32).reshape(3, 2) * scale
        return x, x[:, :1], x, x[:, :1]

    return load_data


def test_what_no_child_can_import_is_shipped_and_imports_in_a_fresh_process(
    tmp_path: Path,
) -> None:
    shipment = Shipment(tmp_path / "shipped")
    refs = {
        "data": shipment.reference(make_nested(), "data"),
        "model": shipment.reference(lambda: "built", "model"),
    }
    assert refs == {"data": f"{SHIPPED_MODULE}:load_data", "model": f"{SHIPPED_MODULE}:model"}
    assert shipment.shipped == ["load_data", "model"]
    shipment.write()
    code = f"import {SHIPPED_MODULE} as m; x = m.load_data()[0]; print(m.model(), float(x.sum()))"
    before = os.environ.get("PYTHONPATH")
    with shipment.importable():  # the children's PYTHONPATH, as the runner hands it down
        env = dict(os.environ)
    assert os.environ.get("PYTHONPATH") == before  # only while the search runs
    run = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["built", str(float(np.arange(6).sum() * 3))]


def test_two_functions_of_one_name_do_not_overwrite_each_other(tmp_path: Path) -> None:
    first, second = make_nested(), make_nested()
    shipment = Shipment(tmp_path)
    assert shipment.reference(first, "data") != shipment.reference(second, "model")


def test_something_that_is_not_a_function_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^data= must be a function \(or 'module:function'\)"):
        Shipment(tmp_path).reference(np.zeros(3), "data")


def test_what_cloudpickle_cannot_carry_is_one_line(tmp_path: Path) -> None:
    import threading

    lock = threading.Lock()
    shipment = Shipment(tmp_path)
    shipment.reference(lambda: lock, "data")
    with pytest.raises(ConfigError, match=r"^data cannot be shipped .* importable module"):
        shipment.write()


def test_each_calls_functions_get_a_folder_that_no_later_call_rewrites(tmp_path: Path) -> None:
    """A second call on a study (another model, while the first one's search runs) ships into a
    folder of its own: the first one's trials keep importing the first one's functions. The
    same functions find their folder again; a refused call's folder is removed."""
    first, second, again = Shipment(tmp_path), Shipment(tmp_path), Shipment(tmp_path)
    first.reference(lambda: "first", "model")
    second.reference(lambda: "second", "model")
    first.write()
    one = first.folder
    assert one is not None
    written = {p.name: p.read_bytes() for p in one.iterdir()}
    second.write()
    other = second.folder
    assert other is not None and other != one and other.parent == one.parent == tmp_path
    assert {p.name: p.read_bytes() for p in one.iterdir()} == written
    again.reference(first._shipped["model"], "model")  # the very same function, a later call
    again.write()
    assert again.folder == one and not again.created
    again.discard()  # it made nothing: it removes nothing
    second.discard()
    assert one.exists() and not other.exists()
