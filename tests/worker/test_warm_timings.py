"""A warm child's timing fields: its import is outside the trial's wall unless it ran after
hand-over (pure arithmetic; the real child: tests/e2e/test_warm_child.py)."""

from __future__ import annotations

import pytest

from tuner.core.protocol import WARM_FLAG
from tuner.worker.warm import Preloaded, split_argv


def test_an_import_done_before_hand_over_is_hidden() -> None:
    pre = Preloaded("tensorflow", {}, None, import_s=3.0, imported_at=100.0)
    started_at = pre.handed_over(105.0, taken_at=105.01)
    assert started_at == pytest.approx(105.01)  # process_start_s: the hand-over's 10 ms
    assert pre.visible_s == 0.0 and pre.hidden_s == pytest.approx(3.0)
    assert pre.runners("tensorflow", lambda backend: {}) == ({}, 0.0)


def test_an_import_still_running_at_hand_over_counts_after_it() -> None:
    pre = Preloaded("tensorflow", {}, None, import_s=3.0, imported_at=102.0)
    started_at = pre.handed_over(101.0, taken_at=102.01)
    assert pre.visible_s == pytest.approx(1.0) and pre.hidden_s == pytest.approx(2.0)
    assert started_at == pytest.approx(101.01)  # process_start_s 10 ms, then 1 s of import_s
    assert pre.runners("tensorflow", lambda backend: {})[1] == pytest.approx(1.0)


def test_an_import_error_is_raised_with_the_request() -> None:
    pre = Preloaded("jax", None, ImportError("no jax"), import_s=0.1, imported_at=100.0)
    pre.handed_over(101.0, taken_at=101.0)
    with pytest.raises(ImportError, match="no jax"):
        pre.runners("jax", lambda backend: {})


def test_the_warm_flag_is_split_off() -> None:
    assert split_argv([WARM_FLAG, "jax", "r.json", "o.json"]) == ("jax", ["r.json", "o.json"])
    assert split_argv(["r.json", "o.json"]) == (None, ["r.json", "o.json"])
