"""The workload fingerprint a baseline's reuse depends on: it changes with the model's
configuration, the data and the source of the workload's modules, and only with them."""

from __future__ import annotations

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
