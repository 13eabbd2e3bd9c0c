"""Reusing another study's single-device baseline, with a fake child and real Optuna studies in
one SQLite file: a second study of the same training on the same devices, host and versions
launches no baseline run and stores the first study's record naming it; anything that changes
the baseline's runs (seed, base learning rate, precision, host, more repeats than were measured)
measures its own; a failed baseline is never reused."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fake_child import PLAN, FakeChild, make_spec, ok

from tuner.core.recommend import baseline_at
from tuner.core.spec import SearchSpec
from tuner.driver import study as study_module
from tuner.driver.reuse import keys
from tuner.driver.reuse.keys import request_fields
from tuner.driver.setup.baseline import baseline_request
from tuner.driver.study import run_search
from tuner.results import recommendation

SIGNATURE = PLAN.device_signature


@pytest.fixture(autouse=True)
def no_views(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(study_module, "refresh", lambda study, warn=None: None)


def answer(request: dict[str, Any]) -> dict[str, Any]:
    batch = request.global_batch_size
    if request.plan.num_replicas == 1:
        return ok(batch, throughput=400.0)
    return ok(batch, throughput=10.0 * batch)


def spec(multipliers: tuple[int, ...] = (1, 2), rules: tuple[str, ...] = ("none",), **search: Any):
    base = make_spec(multipliers, max_repeats=2, **search)
    return replace(base, search=SearchSpec.from_flat({**base.search.flat(), "lr_rules": rules}))


def baseline_runs(child: FakeChild) -> int:
    return sum(1 for r in child.requests if r.mode != "inspect" and r.plan.num_replicas == 1)


def search(storage: str, name: str, **spec_fields: Any):
    child = FakeChild(answer)
    report = run_search(
        spec(**spec_fields), PLAN, storage, study_name=name, baseline=True, runner=child
    )
    return child, report.study


def test_a_second_study_of_the_same_training_reuses_the_first_ones_baseline(tmp_path: Path) -> None:
    storage = f"sqlite:///{tmp_path / 's.db'}"
    first, measured = search(storage, "first")
    assert baseline_runs(first) == 2  # max_repeats
    own = baseline_at(measured.user_attrs["baselines"], SIGNATURE, "float32")
    assert own["reuse_key"] and own["measured_at"] and "reused_from" not in own

    # Another grid and other rules: the baseline's runs are the same, so none is launched.
    again, study = search(storage, "second", multipliers=(2, 4), rules=("sqrt",))
    assert baseline_runs(again) == 0
    reused = baseline_at(study.user_attrs["baselines"], SIGNATURE, "float32")
    assert reused == {**own, "reused_from": "first"}
    rec = recommendation(study)
    assert rec["baseline_throughput"] == 400.0 and rec["speedup_vs_single_device"] is not None

    # A third study names the study that measured it, not the one it was copied from.
    _, third = search(storage, "third", multipliers=(4,))
    assert baseline_at(third.user_attrs["baselines"], SIGNATURE, "float32")["reused_from"] == (
        "first"
    )


@pytest.mark.parametrize("change", ["seed", "base_lr", "precision", "host", "more repeats"])
def test_a_baseline_of_other_runs_is_measured_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    storage = f"sqlite:///{tmp_path / 's.db'}"
    search(storage, "first")
    fields: dict[str, Any] = {
        "seed": {"seed": 7},
        "base_lr": {"base_lr": 2e-3},
        "precision": {"precisions": ("mixed_bfloat16",)},
        "more repeats": {"max_repeats": 3},
        "host": {},
    }[change]
    if change == "host":
        monkeypatch.setattr(keys.platform, "node", lambda: "another-host")
    child = FakeChild(answer)
    second = _with(spec(), **fields)
    run_search(second, PLAN, storage, study_name="second", baseline=True, runner=child)
    assert baseline_runs(child) == fields.get("max_repeats", 2)


def _with(study_spec: Any, **search: Any) -> Any:
    return replace(study_spec, search=SearchSpec.from_flat({**study_spec.search.flat(), **search}))


def test_the_grid_of_a_target_does_not_key_the_baseline(tmp_path: Path) -> None:
    """With a loss target the requests carry the grid's batches for the cadence; the baseline
    trains without a target, so another grid still reuses it."""
    storage = f"sqlite:///{tmp_path / 's.db'}"
    search(storage, "first", target_loss=0.5)
    again, _ = search(storage, "second", multipliers=(1, 4), target_loss=0.5)
    assert baseline_runs(again) == 0


def test_a_failed_baseline_is_not_reused(tmp_path: Path) -> None:
    storage = f"sqlite:///{tmp_path / 's.db'}"

    def failing(request: dict[str, Any]) -> dict[str, Any]:
        if request.plan.num_replicas == 1:
            return {"status": "failed", "error": "boom"}
        return answer(request)

    first = FakeChild(failing)
    run_search(spec(), PLAN, storage, study_name="first", baseline=True, runner=first)
    again, _ = search(storage, "second")
    assert baseline_runs(again) == 2


def test_the_reuse_key_hashes_the_baseline_request_by_its_stored_names() -> None:
    """Stored baselines carry keys hashed from the request as it was written before the protocol
    was typed: the typed request must hash the same fields under the same names."""
    search = spec(target_loss=0.5)
    request = baseline_request(search, PLAN, "float32")
    assert request_fields(request) == {
        "mode": "trial",
        "plan": PLAN.single_device().to_dict(),
        "workload": {
            "model": search.workload.model,
            "data": search.workload.data,
            "loss": "mse",
            "optimizer": "adam",
            "dataset": None,
            "backend": "tensorflow",
        },
        "global_batch_size": search.search.grid.base_batch_size,
        "learning_rate": search.search.grid.base_lr,
        "epochs": search.search.run.epochs,
        "train_samples": None,
        "val_samples": None,
        "seed": 0,
        "precision": "float32",
        "loop": "fit",
        "noise_scale": search.search.run.noise_scale,
        "noise_scale_steps": None,
        "target_loss": None,  # a baseline trains its whole budget, whatever the target
        "eval_every_samples": None,
    }
