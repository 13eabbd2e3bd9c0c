"""A trial whose worker died between Optuna creating it and its first heartbeat (the soak's
kills found one) has no heartbeat for Optuna's stale check: tuner fails it after the grace, so
that its grid point is not claimed forever; a trial that wrote anything is left to the heartbeat."""

from __future__ import annotations

import time
from datetime import datetime, timedelta

import optuna
from optuna.trial import TrialState, create_trial

from tuner.core.trials import died_unborn
from tuner.driver.resume import requeue_unfinished

NOW = datetime(2026, 12, 2, 12, 0, 0)


def running(**fields: object) -> optuna.trial.FrozenTrial:
    trial = create_trial(state=TrialState.RUNNING, **fields)  # type: ignore[arg-type]
    trial.datetime_start = NOW - timedelta(seconds=10)
    return trial


def test_only_a_running_trial_with_nothing_written_past_the_grace_died_unborn() -> None:
    assert died_unborn(running(), NOW, grace_s=3)
    assert not died_unborn(running(), NOW, grace_s=30)  # within the grace: maybe just created
    assert not died_unborn(running(user_attrs={"global_batch_size": 64}), NOW, grace_s=3)
    assert not died_unborn(running(system_attrs={"grid_id": 0}), NOW, grace_s=3)
    done = create_trial(state=TrialState.COMPLETE, values=[1.0])
    assert not died_unborn(done, NOW, grace_s=3)


def test_a_real_storage_fails_the_unborn_trial_and_keeps_the_written_one(tmp_path) -> None:
    storage = optuna.storages.RDBStorage(
        f"sqlite:///{tmp_path / 'u.db'}", heartbeat_interval=1, grace_period=1
    )
    study = optuna.create_study(storage=storage, directions=["minimize", "maximize"])
    unborn = storage.create_new_trial(study._study_id)
    written = storage.create_new_trial(study._study_id)
    storage.set_trial_user_attr(written, "global_batch_size", 64)
    storage.record_heartbeat(written)
    time.sleep(1.5)
    storage.record_heartbeat(written)  # its worker lives
    states = {t._trial_id: t.state for t in requeue_unfinished(study)}
    assert states == {unborn: TrialState.FAIL, written: TrialState.RUNNING}
