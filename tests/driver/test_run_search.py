"""The driver end to end with a fake runner: real Optuna studies in SQLite, canned child results.

What these prove without TensorFlow: out-of-memory prunes larger batches without launching them,
resuming runs no finished grid point again, and a trial's stored values and attributes are the
child's result. (``tests/e2e`` proves the same with real training.)
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import optuna
import pytest
from fake_child import PLAN, FakeChild, make_spec, ok
from optuna.trial import TrialState

from tuner.core.configurations import status_of
from tuner.core.record import decode
from tuner.driver import study as study_module
from tuner.driver.study import SearchReport, run_search


@pytest.fixture
def storage(tmp_path: Path) -> Iterator[str]:
    """A SQLite URL for a fresh file, in memory-backed /dev/shm where there is one: on a disk
    every commit waits for a sync (~20 ms), and a search commits a few hundred times."""
    shm = Path("/dev/shm")
    fast = shm.is_dir() and os.access(shm, os.W_OK)
    folder = Path(tempfile.mkdtemp(prefix="tuner-driver-", dir=shm)) if fast else tmp_path
    yield f"sqlite:///{folder / 'fake.db'}"
    if fast:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def refreshed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names of the studies whose views the driver refreshed (the views are not under test)."""
    names: list[str] = []
    monkeypatch.setattr(
        study_module, "refresh", lambda study, warn=None: names.append(study.study_name)
    )
    return names


def search(storage: str, child: FakeChild, spec: Any = None, **kwargs: Any) -> SearchReport:
    return run_search(
        spec or make_spec(),
        PLAN,
        storage,
        baseline=kwargs.pop("baseline", False),
        runner=child,
        **kwargs,
    )


def by_point(study: optuna.Study) -> dict[tuple[int, str], optuna.trial.FrozenTrial]:
    return {
        (t.params["global_batch_size"], t.params["lr_rule"]): t
        for t in study.get_trials(deepcopy=False)
    }


def oom_from(limit: int) -> Any:
    def trial(request: dict[str, Any]) -> dict[str, Any]:
        batch = request.global_batch_size
        if batch >= limit:
            return {"status": "oom", "error": "ResourceExhaustedError: OOM when allocating"}
        return ok(batch)

    return trial


def test_an_oom_prunes_every_larger_batch_without_launching_it(
    storage: str, refreshed: list[str]
) -> None:
    child = FakeChild(oom_from(256))
    report = search(storage, child)
    # Batch ascending: the first out-of-memory (256, linear) is the last launch; (64, none)
    # trains exactly like (64, linear) and is not launched.
    assert child.launched() == [
        (64, "linear"),
        (128, "linear"),
        (128, "none"),
        (256, "linear"),
    ]
    trials = by_point(report.study)
    assert len(trials) == 8
    assert status_of(trials[(256, "linear")]) == "oom"
    for point in [(256, "none"), (512, "linear"), (512, "none")]:
        trial = trials[point]
        assert trial.state == TrialState.PRUNED
        assert status_of(trial) == "oom-implied"
        assert decode(trial).error == "global batch 256 already ran out of memory on 2x cpu"
    assert {status_of(trials[(b, r)]) for b in (64, 128) for r in ("none", "linear")} == {"ok"}
    assert (report.launched, report.grid_size, report.running) == (8, 8, 0)
    assert refreshed == ["fake"]


def test_a_probed_oom_prunes_without_launching(storage: str, refreshed: list[str]) -> None:
    child = FakeChild(oom_from(256))
    report = search(storage, child, probe=True)
    probes = report.study.user_attrs["probes"]["2x cpu"]
    assert probes["smallest_oom_batch"] == 256
    assert probes["largest_fitting_batch"] == 128
    assert {b for b, _ in child.launched()} == {64, 128}  # no trial at 256 or 512
    implied = [t for t in report.study.trials if status_of(t) == "oom-implied"]
    assert len(implied) == 4
    assert decode(implied[0]).flat["error"] == (
        "the probe found global batch 256 out of memory on 2x cpu"
    )


def test_resume_runs_no_finished_grid_point_again(storage: str, refreshed: list[str]) -> None:
    def first(request: dict[str, Any]) -> dict[str, Any]:
        if request.global_batch_size == 128 and request.rule.name == "none":
            return {"status": "error", "error": "ValueError: a bug in the model"}
        return oom_from(256)(request)

    spec = make_spec((1, 2, 4))
    child = FakeChild(first)
    done = search(storage, child, spec)
    statuses = sorted(status_of(t) for t in done.study.trials)
    assert statuses == ["error", "ok", "ok", "ok", "oom", "oom-implied"]
    again = FakeChild(lambda request: ok(request.global_batch_size))
    report = search(storage, again, spec)
    assert again.launched() == []  # an error or an out-of-memory would repeat: both are settled
    assert [r.mode for r in again.requests] == ["inspect"]
    assert (report.launched, report.grid_size) == (0, 6)
    assert len(report.study.trials) == 6
    assert refreshed == ["fake", "fake"]


def test_an_interrupted_trial_is_marked_and_runs_again_once_on_resume(
    storage: str, refreshed: list[str]
) -> None:
    def stopped(request: dict[str, Any]) -> dict[str, Any]:
        if request.global_batch_size == 128 and request.rule.name == "none":
            raise KeyboardInterrupt
        return ok(request.global_batch_size)

    child = FakeChild(stopped)
    with pytest.raises(KeyboardInterrupt):
        search(storage, child, make_spec((1, 2)))
    interrupted = optuna.load_study(study_name="fake", storage=storage).trials[-1]
    assert interrupted.state == TrialState.FAIL
    assert status_of(interrupted) == "interrupted"
    assert decode(interrupted).error == "stopped by the user"
    assert refreshed == []  # the views wait for a finished search

    child = FakeChild(lambda request: ok(request.global_batch_size))
    report = search(storage, child, make_spec((1, 2)))
    assert child.launched() == [(128, "none")]
    assert report.launched == 1
    trials = report.study.trials
    assert len(trials) == 5
    assert trials[-1].system_attrs["failed_trial"] == interrupted.number
    assert status_of(trials[-1]) == "ok"


def test_a_trial_stores_what_its_child_measured(storage: str, refreshed: list[str]) -> None:
    measured = ok(
        128,
        peak_memory_bytes=123_456,
        gradient_noise_scale=64.0,
        timings={"training_s": 0.25},
    )
    child = FakeChild(lambda request: measured)
    report = search(storage, child, make_spec((2,)), baseline=True)
    baseline, *trials = child.requests[1:]
    assert baseline.plan.num_replicas == 1 and baseline.global_batch_size == 64
    assert report.study.user_attrs["baselines"]["2x cpu"]["throughput"] == 1280.0
    linear = by_point(report.study)[(128, "linear")]
    assert linear.state == TrialState.COMPLETE
    assert linear.values == [1.0 / 128, 1280.0]
    attrs = decode(linear).flat
    assert attrs["status"] == "ok"
    assert (attrs["final_loss"], attrs["throughput"]) == (1.0 / 128, 1280.0)
    assert attrs["train_loss"] == 2.0 / 128
    assert attrs["peak_memory_bytes"] == 123_456
    assert attrs["timings"]["training_s"] == 0.25 and attrs["timings"]["wall_s"] == 0.5
    assert attrs["learning_rate"] == pytest.approx(2e-3)  # linear: 2 × base batch
    assert (attrs["per_replica_batch_size"], attrs["num_replicas"]) == (64, 2)
    assert attrs["device_signature"] == "2x cpu"
    # Noise scale 64 at base batch 64, trial batch 128: each sample does (64 + 64) / (64 + 128)
    # = 2/3 of a base-batch sample's work (Pollux), so goodput is 2/3 of the 1280 samples/s.
    assert attrs["statistical_efficiency"] == pytest.approx(2 / 3)
    assert attrs["goodput"] == pytest.approx(1280.0 * 2 / 3)
    assert "error" not in attrs
    sent = next(r for r in trials if r.rule.name == "linear")
    assert sent.learning_rate == pytest.approx(2e-3)
    assert sent.rule.ratio == 2


def test_a_bad_measurement_fails_the_trial_with_its_reason(
    storage: str, refreshed: list[str]
) -> None:
    child = FakeChild(lambda request: {**ok(64), "throughput": 0.0})
    report = search(storage, child, make_spec((1,)))
    for trial in report.study.trials:
        assert trial.state == TrialState.FAIL
        assert status_of(trial) == "error"
        assert decode(trial).error == "bad measurement: loss 0.015625, throughput 0.0"
