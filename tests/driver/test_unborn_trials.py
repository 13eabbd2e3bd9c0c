"""A trial whose worker died between claiming it and its first heartbeat has no heartbeat for
Optuna's stale check: tuner fails it after the grace, so that its grid point is not claimed
forever. The soak's kills found two forms: a trial with nothing written, and a queued copy (a
retry or a repeat, popped by ``study.ask`` with its attributes already in place) whose worker was
killed right after an outage, before the heartbeat it was waiting to write. A trial that beats is
left to the heartbeat, and so is one whose worker runs without a heartbeat (``--heartbeat 0``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timedelta

import optuna
import pytest
import sqlalchemy
from optuna.trial import TrialState, create_trial
from pg_databases import fresh_database

from tuner.core.record import decode, store
from tuner.core.trials import HEARTBEAT_S, died_unborn
from tuner.driver.trial.resume import requeue, requeue_unfinished, unborn_wait_s
from tuner.storage import open_storage
from tuner.storage.guarded import attach

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


def test_where_the_storage_reads_heartbeats_a_trial_silent_for_the_grace_died() -> None:
    """Timed by this process's own clock: the trial's start is the claiming host's local time."""
    copy = running(user_attrs={"global_batch_size": 64}, system_attrs={"grid_id": 3})
    assert died_unborn(copy, NOW, grace_s=3, silent_for_s=3.5)
    assert not died_unborn(copy, NOW, grace_s=3, silent_for_s=0.0)  # just seen: maybe claimed
    skewed = running()
    skewed.datetime_start = NOW - timedelta(hours=2)  # a claimant two time zones behind
    assert not died_unborn(skewed, NOW, grace_s=3, silent_for_s=0.0)
    without = running(user_attrs={"global_batch_size": 64, HEARTBEAT_S: 0})
    assert not died_unborn(without, NOW, grace_s=3, silent_for_s=60.0)  # its worker never beats
    assert died_unborn(running(user_attrs={HEARTBEAT_S: 20.0}), NOW, grace_s=3, silent_for_s=4)


def _stamp_hours_back(url: str, trial_id: int, hours: int) -> None:
    """The trial's start as a worker on another clock would have stamped it."""
    engine = sqlalchemy.create_engine(url)
    with engine.begin() as db:
        db.execute(
            sqlalchemy.text("UPDATE trials SET datetime_start = :t WHERE trial_id = :id"),
            {"t": datetime.now() - timedelta(hours=hours), "id": trial_id},
        )
    engine.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def url(request, tmp_path) -> Iterator[str]:
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'u.db'}"
        return
    with fresh_database("tuner_unborn") as pg:
        yield pg


def test_a_real_storage_fails_every_trial_that_never_beat_and_keeps_the_others(url) -> None:
    # tuner's own storage (guarded, its heartbeat read); grace 3 s, the shortest tuner sets
    storage = open_storage(url, create=True, heartbeat_s=1, wait_s=5)
    study = optuna.create_study(storage=storage, directions=["minimize", "maximize"])
    attach(study, storage)  # as tuner's opening does: the grace is the guard's
    unborn = study.ask()._trial_id  # nothing written
    beating = study.ask()
    storage.record_heartbeat(beating._trial_id)  # as the objective does: a beat, then its record
    store(beating, {"global_batch_size": 64, HEARTBEAT_S: 1.0})
    dead = study.ask()
    store(dead, {"global_batch_size": 128, HEARTBEAT_S: 1.0})
    study.tell(dead, state=TrialState.FAIL)
    requeue(study, study._storage.get_trial(dead._trial_id))
    copy = study.ask()  # the queued copy, popped: a retry's attributes, no heartbeat
    configuration = decode(copy).configuration
    assert configuration.global_batch_size == 128 and configuration.heartbeat_s is None
    no_heartbeat = study.ask()  # claimed by a worker run with --heartbeat 0
    store(no_heartbeat, {HEARTBEAT_S: 0})
    _stamp_hours_back(url, copy._trial_id, 2)  # claimed on a host whose clock is 2 h behind
    first = {t._trial_id: t.state for t in requeue_unfinished(study)}
    assert all(first[k] == TrialState.RUNNING for k in (unborn, copy._trial_id))
    assert 2.5 < unborn_wait_s(study) <= 3.0  # the loop's last look waits the grace out
    time.sleep(3.5)
    storage.record_heartbeat(beating._trial_id)  # its worker lives
    states = {t._trial_id: t.state for t in requeue_unfinished(study)}
    assert {k: states[k] for k in (unborn, beating._trial_id, copy._trial_id)} == {
        unborn: TrialState.FAIL,
        beating._trial_id: TrialState.RUNNING,
        copy._trial_id: TrialState.FAIL,
    }
    assert states[no_heartbeat._trial_id] == TrialState.RUNNING
    assert unborn_wait_s(study) == 0.0
    storage.engine.dispose()
