"""The global batch parameter: an integer on a log scale in a new study (so optuna-dashboard orders
the sizes as numbers), the categorical kind kept in a study an older tuner made. Real Optuna
studies in SQLite through the real driver, with the fake runner of ``fake_child``."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import optuna
import pytest
from fake_child import PLAN, FakeChild, make_spec, ok
from optuna.distributions import CategoricalDistribution, IntDistribution

from tuner.core.configurations import status_of
from tuner.driver import study as study_module
from tuner.driver.study import SearchReport, run_search
from tuner.driver.trial import objective
from tuner.driver.trial.grid import stores_batch_as_category, suggest_global_batch


@pytest.fixture(autouse=True)
def _no_views(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(study_module, "refresh", lambda study, warn=None: None)


def search(
    storage: str, child: FakeChild, multipliers: tuple[int, ...] = (1, 2, 4)
) -> SearchReport:
    return run_search(make_spec(multipliers), PLAN, storage, baseline=False, runner=child)


def batch_distributions(study: optuna.Study) -> set[Any]:
    return {t.distributions["global_batch_size"] for t in study.get_trials(deepcopy=False)}


def test_a_new_study_stores_the_batch_as_a_log_scale_integer_and_runs_the_grid_in_order(
    tmp_path: Path,
) -> None:
    child = FakeChild(lambda request: ok(request.global_batch_size))
    report = search(f"sqlite:///{tmp_path / 'new.db'}", child)
    assert batch_distributions(report.study) == {IntDistribution(64, 256, log=True)}
    # Batch 64 trains once: at ratio 1 both rules are one training (the other is ``same_as`` it).
    assert [batch for batch, _ in child.launched()] == [64, 128, 128, 256, 256]
    assert {type(t.params["global_batch_size"]) for t in report.study.trials} == {int}


def test_resuming_a_study_with_a_categorical_batch_keeps_that_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A study made before the batch became an integer (its trials: categorical), interrupted at
    one grid point: resuming runs that point and the rest with the stored kind, no error."""
    storage = f"sqlite:///{tmp_path / 'old.db'}"

    def stopped(request: dict[str, Any]) -> dict[str, Any]:
        if request.global_batch_size == 128 and request.rule.name == "none":
            raise KeyboardInterrupt
        return ok(request.global_batch_size)

    with monkeypatch.context() as old_tuner:  # the older tuner: always categorical
        old_tuner.setattr(objective, "stores_batch_as_category", lambda trials: True)
        with pytest.raises(KeyboardInterrupt):
            search(storage, FakeChild(stopped))
    study = optuna.load_study(study_name="fake", storage=storage)
    assert batch_distributions(study) == {CategoricalDistribution([64, 128, 256])}
    # What the check prevents: Optuna refuses a second kind for one parameter of a study.
    shutil.copy(tmp_path / "old.db", tmp_path / "copy.db")
    copy = optuna.load_study(study_name="fake", storage=f"sqlite:///{tmp_path / 'copy.db'}")
    with pytest.raises(ValueError, match="different distribution kind"):
        suggest_global_batch(copy.ask(), [64, 128, 256], categorical=False)

    child = FakeChild(lambda request: ok(request.global_batch_size))
    report = search(storage, child)
    assert (128, "none") in child.launched()
    done = [t for t in report.study.trials if status_of(t) == "ok"]
    assert sorted((t.params["global_batch_size"], t.params["lr_rule"]) for t in done) == [
        (b, r) for b in (64, 128, 256) for r in ("linear", "none")
    ]
    assert batch_distributions(report.study) == {CategoricalDistribution([64, 128, 256])}
    assert stores_batch_as_category(report.study.trials)
