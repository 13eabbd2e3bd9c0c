"""The workload fingerprint a baseline's reuse depends on: it changes with the model's
configuration, the data and the source of the workload's modules, and only with them."""

from __future__ import annotations

import os

import numpy as np
import pytest
from child_requests import run_request, workload

from tuner.driver.reuse.keys import reuse_key
from tuner.worker.digest import array_bytes, workload_digest

WORKLOAD = workload(model="tuner.workloads.regression:build_model", data="tests_data:load")


class Model:
    def __init__(self, units: int) -> None:
        self.units = units

    def get_config(self) -> dict[str, int]:
        return {"units": self.units}


def _read(shift: float = 0.0) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    x = np.arange(12, dtype=np.float32).reshape(4, 3) + shift
    return {"train": (x, x[:, :1]), "val": (x, x[:, :1])}


def test_the_same_workload_has_the_same_fingerprint() -> None:
    assert workload_digest(WORKLOAD, Model(8), _read()) == workload_digest(
        WORKLOAD, Model(8), _read()
    )


def test_another_model_or_other_data_is_another_fingerprint() -> None:
    base = workload_digest(WORKLOAD, Model(8), _read())
    assert workload_digest(WORKLOAD, Model(16), _read()) != base
    assert workload_digest(WORKLOAD, Model(8), _read(shift=1.0)) != base


def test_the_model_modules_source_is_in_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import tuner.workloads.regression as module

    base = workload_digest(WORKLOAD, Model(8), _read())
    monkeypatch.setattr("inspect.getsource", lambda m: "edited" if m is module else "")
    assert workload_digest(WORKLOAD, Model(8), _read()) != base


def test_a_speed_setting_the_children_inherit_changes_the_reuse_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    request = run_request(global_batch_size=64)
    attrs = {"workload": {"digest": "abc"}}
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    before = reuse_key(request, attrs, "2x cpu")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert reuse_key(request, attrs, "2x cpu") != before
    monkeypatch.setenv("UNRELATED_VARIABLE", "x")
    assert reuse_key(request, attrs, "2x cpu") == reuse_key(request, attrs, "2x cpu")
    assert reuse_key(request, {"workload": {"digest": "abd"}}, "2x cpu") != reuse_key(
        request, attrs, "2x cpu"
    )


def test_strings_are_hashed_by_their_contents_not_their_addresses() -> None:
    """A text workload's first samples (object arrays of bytes, as the check reads them) give the
    same bytes in every process, so its baseline is found again; a different split differs."""
    first = np.array([b"good movie", b"bad film"], dtype=object)
    again = np.array([b"".join([b"good ", b"movie"]), b"bad film"], dtype=object)  # other objects
    assert array_bytes(first) == array_bytes(again)
    assert array_bytes(np.array([b"ab", b"c"], dtype=object)) != array_bytes(
        np.array([b"a", b"bc"], dtype=object)
    )


NOTEBOOK = """
import sys, cloudpickle
from tuner.worker.digest import _code

def build_model(units=8):
    # a comment{comment}
    kinds = {{"relu", "gelu", "tanh"}}
    return [units * {scale}, sorted(kinds), [lambda v: v + 1]]

if sys.argv[1] == "pickle":
    sys.stdout.buffer.write(cloudpickle.dumps(build_model))
else:
    print(_code(cloudpickle.loads(sys.stdin.buffer.read()), 0))
    print(",".join(sorted({{"keras", "tensorflow", "jax"}} & set(sys.modules))))
"""


def _code_in_a_fresh_process(tmp_path, scale: int = 2, comment: str = "") -> str:
    """The model function's code as a trial child computes it: defined in a script (__main__),
    shipped by value (cloudpickle), loaded by another process with another hash seed."""
    import subprocess
    import sys

    script = tmp_path / "notebook.py"
    script.write_text(NOTEBOOK.format(scale=scale, comment=comment))
    pickled = subprocess.run(
        [sys.executable, str(script), "pickle"], capture_output=True, check=True,
        env={**os.environ, "PYTHONHASHSEED": "1"},
    ).stdout  # fmt: skip
    loaded = subprocess.run(
        [sys.executable, str(script), "load"], input=pickled, capture_output=True, check=True,
        env={**os.environ, "PYTHONHASHSEED": "2"},
    ).stdout.decode()  # fmt: skip
    code, frameworks = loaded.split("\n")[:2]
    # Hashing code needs no framework: each of these processes importing TensorFlow made this
    # test 40-50 s instead of about 1 (fixed in b51f688).
    assert frameworks == "", f"the digest of a function's code imported {frameworks}"
    return code


def test_a_shipped_functions_code_is_the_same_in_every_process_and_changes_with_an_edit(
    tmp_path,
) -> None:
    """What a resumed study compares (issue 44, case 1): the same function gives the same code
    whatever the process and its hash seed (a set literal's order); a comment changes nothing;
    an edit does."""
    first = _code_in_a_fresh_process(tmp_path)
    assert first and first == _code_in_a_fresh_process(tmp_path)
    assert (
        _code_in_a_fresh_process(
            tmp_path, comment="\n    # a second comment line: every line below moves"
        )
        == first
    )
    assert _code_in_a_fresh_process(tmp_path, scale=3) != first


def test_each_part_of_the_workload_changes_alone() -> None:
    from tuner.worker.digest import PARTS, workload_parts

    base = workload_parts(WORKLOAD, Model(8), _read())
    assert tuple(base) == PARTS
    other_model = workload_parts(WORKLOAD, Model(16), _read())
    assert [k for k in PARTS if other_model[k] != base[k]] == ["model configuration"]
    other_data = workload_parts(WORKLOAD, Model(8), _read(shift=1.0))
    assert [k for k in PARTS if other_data[k] != base[k]] == ["data samples"]
