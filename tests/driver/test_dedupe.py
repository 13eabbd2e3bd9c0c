"""Each configuration trains once: grid points that train alike cost no child (a fake child, real
Optuna studies in SQLite)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import optuna
import pytest
from fake_child import PLAN, FakeChild, make_spec, ok
from optuna.trial import TrialState

from tuner.core.outcome import TrialOutcome
from tuner.core.record import decode
from tuner.core.spec import SearchSpec
from tuner.driver import study as study_module
from tuner.driver.observer import QuietObserver
from tuner.driver.study import run_search


class Notes(QuietObserver):
    """An observer that keeps the notes and the finished trials."""

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.started: list[int] = []
        self.finished: list[tuple[int, str]] = []

    def note(self, message: str) -> None:
        self.notes.append(message)

    def trial_started(self, number: int, position: int, total: int, params: dict[str, Any]) -> None:
        self.started.append(number)

    def epoch_finished(self, event: dict[str, Any]) -> None:
        pass

    def trial_progress(self, event: dict[str, Any]) -> None:
        pass

    def trial_finished(self, number: int, outcome: TrialOutcome) -> None:
        self.finished.append((number, outcome.status))


@pytest.fixture(autouse=True)
def no_views(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(study_module, "refresh", lambda study, warn=None: None)


def test_points_that_train_alike_cost_no_child_and_carry_same_as(tmp_path: Path) -> None:
    child = FakeChild(
        lambda request: ok(request.global_batch_size, peak_memory_bytes=77, timings={"a": 1})
    )
    rules = ("none", "linear", "sqrt", "linear-warmup")
    base = make_spec((1, 2), warmup_steps=3)
    spec = replace(base, search=SearchSpec.from_flat({**base.search.flat(), "lr_rules": rules}))
    observer = Notes()
    url = f"sqlite:///{tmp_path / 'same.db'}"
    report = run_search(spec, PLAN, url, baseline=False, observer=observer, runner=child)
    # Batch 64: four rules, one training; batch 128: four different trainings.
    assert sorted(child.launched()) == [(64, "linear")] + [(128, rule) for rule in sorted(rules)]
    trials = {(t.params["global_batch_size"], t.params["lr_rule"]): t for t in report.study.trials}
    original = trials[(64, "linear")]
    assert decode(original).reuse.same_as is None
    for rule in ("none", "sqrt", "linear-warmup"):
        twin = trials[(64, rule)]
        assert twin.state == TrialState.COMPLETE
        assert decode(twin).reuse.same_as == original.number
        assert twin.values == original.values
        assert decode(twin).result.peak_memory_bytes == 77  # the original's measurement
        assert not decode(twin).timings  # no child ran for it
        assert decode(twin).configuration.lr_rule == rule  # its own configuration
        assert (
            decode(twin).configuration.training_key == decode(original).configuration.training_key
        )
        assert f"trial {twin.number}: same training as #{original.number}" in " ".join(
            observer.notes
        )
        assert twin.number not in observer.started
        assert (twin.number, "ok") in observer.finished
    assert len({decode(trials[(128, rule)]).flat["training_key"] for rule in rules}) == 4
    assert report.launched == 8


def test_an_original_that_did_not_complete_is_no_reason_to_skip(tmp_path: Path) -> None:
    def first_fails(request: dict[str, Any]) -> dict[str, Any]:
        if request.global_batch_size == 64 and request.rule.name == "linear":
            return {"status": "error", "error": "flaky"}
        return ok(request.global_batch_size)

    child = FakeChild(first_fails)
    url = f"sqlite:///{tmp_path / 'fail.db'}"
    report = run_search(make_spec((1,)), PLAN, url, baseline=False, runner=child)
    assert child.launched() == [(64, "linear"), (64, "none")]
    assert not any(decode(t).reuse.same_as is not None for t in report.study.trials)


def test_resume_keeps_same_as_trials_settled(tmp_path: Path) -> None:
    first = FakeChild(lambda request: ok(request.global_batch_size))
    url = f"sqlite:///{tmp_path / 'resume.db'}"
    run_search(make_spec((1, 2)), PLAN, url, baseline=False, runner=first)
    child = FakeChild(lambda request: ok(request.global_batch_size))
    report = run_search(make_spec((1, 2)), PLAN, url, baseline=False, runner=child)
    assert child.launched() == [] and report.launched == 0
    assert len(optuna.load_study(study_name="fake", storage=url).trials) == 4
