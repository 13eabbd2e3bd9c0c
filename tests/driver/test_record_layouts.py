"""A study the earlier, flat layout wrote (one user attribute per figure, ~80 names) is read as
the grouped one (:mod:`tuner.core.record`), never misread: ``tuner show``, the recommendation
and a resumed search see the same trials, figures and decisions."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import optuna
from fake_child import PLAN, FakeChild, make_spec, ok
from optuna.trial import create_trial
from typer.testing import CliRunner

from tuner.cli.app import app
from tuner.core.record import GROUPS, STORED_KEYS, decode
from tuner.driver.study import run_search
from tuner.results import recommendation


def oom_from(limit: int) -> Any:
    def trial(request: Any) -> dict[str, Any]:
        if request.global_batch_size >= limit:
            return {"status": "oom", "error": "ResourceExhaustedError: OOM when allocating"}
        return ok(request.global_batch_size)

    return trial


def search(url: str, child: FakeChild) -> Any:
    return run_search(make_spec(), PLAN, url, baseline=False, runner=child)


def flat_copy(source: str, target: str) -> None:
    """``source``'s study written again in the earlier layout: every name its own attribute."""
    study = optuna.load_study(study_name="fake", storage=source)
    old = optuna.create_study(study_name="fake", storage=target, directions=study.directions)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        old.set_metric_names(study.metric_names or [])
    for key, value in study.user_attrs.items():
        old.set_user_attr(key, value)
    for trial in study.get_trials():
        old.add_trial(
            create_trial(
                state=trial.state,
                values=trial.values,
                params=trial.params,
                distributions=trial.distributions,
                user_attrs=dict(decode(trial).flat),
                system_attrs=trial.system_attrs,
            )
        )


def show(url: str) -> list[dict[str, Any]]:
    shown = CliRunner().invoke(
        app, ["show", "--storage", url, "--study-name", "fake", "--format", "json"]
    )
    assert shown.exit_code == 0, shown.output
    return json.loads(shown.stdout)


def test_a_study_of_the_earlier_layout_is_shown_recommended_and_resumed_alike(
    tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setattr("tuner.driver.study.refresh", lambda study, warn=None: None)
    new, old = f"sqlite:///{tmp_path}/new.db", f"sqlite:///{tmp_path}/old.db"
    search(new, FakeChild(oom_from(256)))
    flat_copy(new, old)
    grouped = optuna.load_study(study_name="fake", storage=new).get_trials()
    flat = optuna.load_study(study_name="fake", storage=old).get_trials()
    assert all(set(t.user_attrs) <= set(STORED_KEYS) for t in grouped)
    assert all(not set(t.user_attrs) & set(GROUPS) for t in flat)  # really the earlier layout
    assert max(len(t.user_attrs) for t in flat) > 2 * len(STORED_KEYS)
    assert [decode(t) for t in flat] == [decode(t) for t in grouped]

    assert show(old) == show(new)
    recs = [recommendation(optuna.load_study(study_name="fake", storage=url)) for url in (new, old)]
    for rec in recs:
        rec.pop("created_at", None)
        rec.get("provenance", {}).pop("created_at", None)
    assert recs[0] == recs[1]

    again = FakeChild(oom_from(256))
    report = search(old, again)  # resumed: every grid point is settled, none trains again
    assert again.launched() == [] and len(report.study.trials) == len(flat)


def test_a_trial_of_the_earlier_layout_queued_again_or_recorded_from_the_spool_is_grouped(
    tmp_path: Path,
) -> None:
    from optuna.trial import TrialState

    from tuner.driver.trial.resume import requeue
    from tuner.driver.trial.spooled import _write

    study = optuna.create_study(
        storage=f"sqlite:///{tmp_path}/s.db", directions=["minimize", "maximize"]
    )
    flat = {"global_batch_size": 64, "lr_rule": "none", "repeat_of": 0, "heartbeat_s": 20.0}
    study.add_trial(create_trial(state=TrialState.FAIL, user_attrs={**flat, "status": "error"}))
    requeue(study, study.get_trials()[0])
    copy = study.get_trials()[1]
    assert set(copy.user_attrs) == {"configuration", "reuse"}  # its own run's attributes left
    record = decode(copy)
    assert record.configuration.global_batch_size == 64 and record.reuse.repeat_of == 0
    assert record.status is None and record.configuration.heartbeat_s is None

    running = study.ask()
    for key, value in flat.items():  # a worker of the earlier tuner started it, then stopped
        running.set_user_attr(key, value)
    frozen = study._storage.get_trial(running._trial_id)
    spooled = {"status": "ok", "throughput": 100.0, "train_loss": 0.5}
    entry = {"attrs": spooled, "state": "COMPLETE", "values": [0.4, 100.0]}
    assert _write(study, study._storage, frozen, entry)
    stored = decode(study._storage.get_trial(running._trial_id))
    assert stored.configuration.global_batch_size == 64 and stored.reuse.repeat_of == 0
    assert (stored.status, stored.throughput, stored.result.train_loss) == ("ok", 100.0, 0.5)
