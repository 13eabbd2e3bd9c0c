"""The single-device baseline per precision, with a fake child and real Optuna studies in SQLite:
a study of several precisions runs one baseline at each, stores each under its own key naming
its precision, and a recommendation's speedup is over the baseline at ITS precision (like with
like); a study of one precision sends and stores what it always did; a study without the
baseline at the pick's precision says the speedup is unknown."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fake_child import PLAN, FakeChild, make_spec, ok

from tuner.core.recommend import baseline_at, baseline_key
from tuner.core.spec import SearchSpec
from tuner.driver import study as study_module
from tuner.driver.study import run_search
from tuner.results import recommendation

PRECISIONS = ("float32", "mixed_bfloat16")
SIGNATURE = PLAN.device_signature
BASELINE_THROUGHPUT = {"float32": 400.0, "mixed_bfloat16": 1000.0}
"""One device: bf16 is 2.5× float32 on its own (what the multi-device speedup must not hold)."""


@pytest.fixture(autouse=True)
def no_views(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(study_module, "refresh", lambda study, warn=None: None)


def per_precision(request: dict[str, Any]) -> dict[str, Any]:
    """One device: the planted baseline throughputs; two replicas: bf16 at 3× float32, so bf16
    is picked, and its 2-replica throughput is 1,536 at batch 128 (1.536× its own baseline,
    3.84× float32's)."""
    batch, precision = request.global_batch_size, request.precision
    if request.plan.num_replicas == 1:
        return ok(batch, throughput=BASELINE_THROUGHPUT[precision], precision=precision)
    speed = 3.0 if precision == "mixed_bfloat16" else 1.0
    return ok(batch, throughput=4.0 * batch * speed, precision=precision)


def single_spec(precisions: tuple[str, ...]) -> Any:
    spec = make_spec((2,), precisions=precisions, max_repeats=2)
    return replace(spec, search=SearchSpec.from_flat({**spec.search.flat(), "lr_rules": ["none"]}))


def baseline_requests(child: FakeChild) -> list[dict[str, Any]]:
    return [r for r in child.requests if r.mode != "inspect" and r.plan.num_replicas == 1]


def test_several_precisions_run_a_baseline_each_and_the_speedup_is_like_with_like(
    tmp_path: Path,
) -> None:
    child = FakeChild(per_precision)
    report = run_search(
        single_spec(PRECISIONS), PLAN, f"sqlite:///{tmp_path / 'b.db'}", baseline=True, runner=child
    )
    sent = baseline_requests(child)
    # max_repeats runs at each precision, each at the base batch on one device.
    assert [r.precision for r in sent] == ["float32"] * 2 + ["mixed_bfloat16"] * 2
    assert {r.global_batch_size for r in sent} == {64}
    stored = report.study.user_attrs["baselines"]
    assert set(stored) == {SIGNATURE, f"{SIGNATURE}, mixed_bfloat16"}
    for precision in PRECISIONS:
        record = baseline_at(stored, SIGNATURE, precision)
        assert record is not None and record["precision"] == precision
        assert record["throughput"] == BASELINE_THROUGHPUT[precision]
    rec = recommendation(report.study)
    assert rec["precision"] == "mixed_bfloat16" and rec["throughput"] == 1536.0
    # Over bf16's own baseline: 1536 / 1000, not 1536 / 400 (which would hold bf16's own gain).
    assert rec["baseline_throughput"] == 1000.0
    assert rec["speedup_vs_single_device"] == pytest.approx(1.536)
    assert rec["scaling_efficiency"] == pytest.approx(0.768)
    assert "1.54×" in rec["verdict"]
    # A second run finds both baselines stored: none runs again.
    again = FakeChild(per_precision)
    run_search(
        single_spec(PRECISIONS), PLAN, f"sqlite:///{tmp_path / 'b.db'}", baseline=True, runner=again
    )
    assert not baseline_requests(again)


def test_one_precision_sends_and_stores_what_it_always_did(tmp_path: Path) -> None:
    child = FakeChild(per_precision)
    report = run_search(
        single_spec(("float32",)),
        PLAN,
        f"sqlite:///{tmp_path / 'one.db'}",
        baseline=True,
        runner=child,
    )
    assert [r.precision for r in baseline_requests(child)] == ["float32", "float32"]
    stored = report.study.user_attrs["baselines"]
    assert list(stored) == [SIGNATURE]
    assert stored[SIGNATURE]["precision"] == "float32"
    assert stored[SIGNATURE]["throughput"] == 400.0
    rec = recommendation(report.study)
    assert rec["speedup_vs_single_device"] == pytest.approx(512.0 / 400.0)


def test_without_the_baseline_at_the_picks_precision_the_speedup_is_unknown(tmp_path: Path) -> None:
    child = FakeChild(per_precision)
    report = run_search(
        single_spec(PRECISIONS),
        PLAN,
        f"sqlite:///{tmp_path / 'old.db'}",
        baseline=True,
        runner=child,
    )
    # A study stored before baselines were per precision: one record, naming none (float32).
    old = {key: value for key, value in report.study.user_attrs["baselines"][SIGNATURE].items()
           if key != "precision"}  # fmt: skip
    report.study.set_user_attr("baselines", {SIGNATURE: old})
    rec = recommendation(report.study)
    assert rec["precision"] == "mixed_bfloat16"
    assert rec["speedup_vs_single_device"] is None and rec["speedup_ci"] is None
    assert "no single-device baseline at mixed_bfloat16" in rec["verdict"]
    assert baseline_at({SIGNATURE: old}, SIGNATURE, "float32") is old  # read as float32


def test_a_reordered_spec_never_replaces_another_precisions_record() -> None:
    stored = {SIGNATURE: {"precision": "mixed_bfloat16", "throughput": 1.0}}
    # float32 listed first now, but the signature's key holds bf16's record: its own key.
    assert baseline_key(stored, SIGNATURE, "float32", "float32") == f"{SIGNATURE}, float32"
    assert baseline_key({}, SIGNATURE, "float32", "float32") == SIGNATURE
    assert baseline_key({}, SIGNATURE, "mixed_float16", "float32") == f"{SIGNATURE}, mixed_float16"
    stored[f"{SIGNATURE}, float32"] = {"precision": "float32", "throughput": 2.0}
    assert baseline_at(stored, SIGNATURE, "float32") == {"precision": "float32", "throughput": 2.0}
    assert baseline_at(stored, SIGNATURE, "mixed_float16") is None
