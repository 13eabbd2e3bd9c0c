"""The precision axis in the driver, with a fake child and real Optuna studies in SQLite: the
grid crosses precisions, every request names its precision, out-of-memory prunes larger batches
at its own precision only, and a study of one precision keeps its old parameters."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fake_child import PLAN, FakeChild, make_spec, ok

from tuner.core.configurations import status_of
from tuner.core.record import decode
from tuner.core.spec import SearchSpec
from tuner.driver import study as study_module
from tuner.driver.study import run_search
from tuner.driver.trial.grid import grid_points

PRECISIONS = ("float32", "mixed_bfloat16")


@pytest.fixture(autouse=True)
def no_views(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(study_module, "refresh", lambda study, warn=None: None)


def fp32_oom_from_256(request: dict[str, Any]) -> dict[str, Any]:
    """float32 runs out of memory from global batch 256; mixed_bfloat16 fits every size (half
    the activations) and runs faster."""
    batch, precision = request.global_batch_size, request.precision
    if precision == "float32" and batch >= 256:
        return {"status": "oom", "error": "ResourceExhaustedError: OOM when allocating"}
    speed = 2.0 if precision == "mixed_bfloat16" else 1.0
    return ok(batch, throughput=10.0 * batch * speed, precision=precision)


def test_the_grid_crosses_precisions_and_oom_stays_within_one(tmp_path: Path) -> None:
    child = FakeChild(fp32_oom_from_256)
    spec = make_spec((1, 2, 4, 8), precisions=PRECISIONS, seeds=2)
    assert len(grid_points(spec)) == 4 * 2 * 2  # batches × rules × precisions
    url = f"sqlite:///{tmp_path / 'p.db'}"
    report = run_search(spec, PLAN, url, baseline=True, runner=child)
    trials = report.study.trials
    assert len(trials) == 16
    for trial in trials:
        assert set(trial.params) == {"global_batch_size", "lr_rule", "precision"}
        assert decode(trial).configuration.precision == trial.params["precision"]
    by = {(t.params["global_batch_size"], t.params["lr_rule"], t.params["precision"]): t
          for t in trials}  # fmt: skip
    # float32: 256 really ran out of memory (one rule), the rest at 256 and 512 were implied.
    fp32 = [status_of(by[(b, r, "float32")]) for b in (256, 512) for r in ("none", "linear")]
    assert fp32.count("oom") == 1 and fp32.count("oom-implied") == 3
    # bf16 was never implied out of memory by float32's: it trained every size.
    assert all(status_of(by[(b, r, "mixed_bfloat16")]) == "ok" for b, r, _ in by)
    launched = [(r.global_batch_size, r.precision) for r in child.requests
                if r.mode == "trial" and r.rule is not None and r.plan.num_replicas == 2
                and r.seed == spec.search.run.seed]  # fmt: skip
    assert (512, "mixed_bfloat16") in launched and (512, "float32") not in launched
    # Every request names its precision; the seed runs use the first one, the baseline runs at
    # each (tests/driver/test_precision_baseline.py).
    assert all(r.precision in PRECISIONS for r in child.requests if r.mode != "inspect")
    baseline = [r for r in child.requests if r.mode != "inspect" and r.plan.num_replicas == 1]
    seeds = [r for r in child.requests if r.mode == "trial" and r.seed != spec.search.run.seed]
    assert baseline and seeds
    assert {r.precision for r in seeds} == {"float32"}
    assert {r.precision for r in baseline} == set(PRECISIONS)
    seed_noise = report.study.user_attrs["seed_noise"][PLAN.device_signature]
    assert seed_noise["precision"] == "float32"
    # Two trainings at different precisions are never the same training.
    assert not any(
        decode(t).reuse.same_as is not None and t.params["global_batch_size"] > 64 for t in trials
    )
    keys = {
        decode(t).configuration.training_key for t in trials if t.params["global_batch_size"] == 128
    }
    assert len(keys) == 4


def test_a_study_of_one_precision_keeps_its_parameters_and_sends_it(tmp_path: Path) -> None:
    child = FakeChild(lambda request: ok(request.global_batch_size))
    spec = make_spec((1,), precisions=("mixed_bfloat16",))
    assert grid_points(spec) == [(64, "none"), (64, "linear")]
    url = f"sqlite:///{tmp_path / 'one.db'}"
    report = run_search(spec, PLAN, url, baseline=False, runner=child)
    for trial in report.study.trials:
        assert set(trial.params) == {"global_batch_size", "lr_rule"}
        assert decode(trial).configuration.precision == "mixed_bfloat16"
    assert {r.precision for r in child.requests if r.mode == "trial"} == {"mixed_bfloat16"}
    default = make_spec((1,))
    assert grid_points(default) == [(64, "none"), (64, "linear")]


def test_the_probe_prunes_only_at_its_own_precision(tmp_path: Path) -> None:
    child = FakeChild(fp32_oom_from_256)
    spec = make_spec((1, 2, 4), precisions=PRECISIONS)
    spec = replace(spec, search=SearchSpec.from_flat({**spec.search.flat(), "lr_rules": ["none"]}))
    url = f"sqlite:///{tmp_path / 'probe.db'}"
    report = run_search(spec, PLAN, url, probe=True, baseline=False, runner=child)
    probes = [r for r in child.requests if r.mode == "probe"]
    assert probes and {r.precision for r in probes} == {"float32"}
    assert report.study.user_attrs["probes"][PLAN.device_signature]["precision"] == "float32"
    statuses = {(t.params["global_batch_size"], t.params["precision"]): status_of(t)
                for t in report.study.trials}  # fmt: skip
    assert statuses[(256, "float32")] == "oom-implied"  # the probe found it: no launch
    assert statuses[(256, "mixed_bfloat16")] == "ok"
