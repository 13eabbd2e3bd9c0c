"""Resuming: trials of dead workers and interrupted trials run again, once (which ones:
:func:`tuner.core.trials.to_requeue`; this module only acts on the storage)."""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Callable
from datetime import datetime
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from tuner.core.record import decode, encode
from tuner.core.trials import HEARTBEAT_S, died_unborn, may_be_unborn, to_requeue
from tuner.storage.guarded import guard_of, storage_call

_OF_ITS_RUN = ("status", "error", HEARTBEAT_S)
"""User attributes of one run that a queued copy does not inherit: the next run writes its own."""


def requeue_unfinished(study: optuna.Study) -> list[FrozenTrial]:
    """Fail trials whose worker died (stale heartbeat; Optuna's retry callback re-queues them),
    then queue again every interrupted trial whose grid point (and model configuration) has no
    other run; return the study's trials after that. One storage step, run again whole after an
    outage: what it decides, it decides from what it reads."""
    return storage_call(study, _requeue_unfinished, study)


def _requeue_unfinished(study: optuna.Study) -> list[FrozenTrial]:
    fail_stale(study)
    trials = study.get_trials(deepcopy=False)
    if _fail_unborn(study, trials):
        trials = study.get_trials(deepcopy=False)
    queued = to_requeue(trials)
    for trial in queued:
        requeue(study, trial)
    return study.get_trials(deepcopy=False) if queued else trials


def fail_stale(study: optuna.Study) -> None:
    """Fail the trials whose heartbeat is older than the grace (a no-op without heartbeat), as
    ``study.optimize`` does before each trial: the loop asks for its trials itself."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        storage_call(study, optuna.storages.fail_stale_trials, study)


def requeue(study: optuna.Study, trial: FrozenTrial) -> None:
    """Queue ``trial``'s grid point again: a WAITING copy that remembers which trial failed."""
    system_attrs = {**trial.system_attrs, "failed_trial": trial.number}
    system_attrs["retry_history"] = [*trial.system_attrs.get("retry_history", []), trial.number]
    study.add_trial(
        optuna.trial.create_trial(
            state=TrialState.WAITING,
            params=trial.params,
            distributions=trial.distributions,
            user_attrs=encode(
                {k: v for k, v in decode(trial).flat.items() if k not in _OF_ITS_RUN}
            ),
            system_attrs=system_attrs,
        )
    )


def _fail_unborn(study: optuna.Study, trials: list[FrozenTrial]) -> bool:
    """Fail the RUNNING trials whose worker died before their first heartbeat (only with one: its
    grace is the bound; :func:`tuner.core.trials.died_unborn`); whether there were any."""
    guarded = _with_grace(study)
    if guarded is None:
        return False
    storage, grace = guarded
    silent_for = _silence.seen(storage, study._study_id, trials)
    now = datetime.now()  # Optuna stamps datetime_start with the local naive time
    unborn = [
        trial
        for trial in trials
        if died_unborn(trial, now, grace, silent_for_s=silent_for(trial._trial_id))
    ]
    for trial in unborn:
        with contextlib.suppress(optuna.exceptions.UpdateFinishedTrialError):
            storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
    return bool(unborn)


def unborn_wait_s(study: optuna.Study) -> float:
    """Seconds until a trial this process has seen without a heartbeat, still RUNNING, has been
    silent for the grace period (0 when there is none): the loop waits that long before it ends
    on a grid point such a trial still claims."""
    guarded = _with_grace(study)
    return 0.0 if guarded is None else _silence.left_s(guarded[0], study._study_id, guarded[1])


def _with_grace(study: optuna.Study) -> tuple[Any, float] | None:
    """The study's storage and its heartbeat grace in seconds; ``None`` without a heartbeat."""
    guard = guard_of(study)
    storage = guard.storage() if guard is not None else None
    if guard is None or storage is None or not guard.grace_s:
        return None
    return storage, float(guard.grace_s)


class _Silence:
    """Which RUNNING trials this process has seen without a heartbeat, and since when on its own
    monotonic clock (a trial's start is another host's local time: no clock to compare with)."""

    def __init__(self) -> None:
        self._since: dict[tuple[str, int], dict[int, float]] = {}
        """By (storage URL, study id): each silent trial id, and when it was first seen so."""

    def seen(
        self, backend: object, study_id: int, trials: list[FrozenTrial]
    ) -> Callable[[int], float | None]:
        """Look at ``trials`` (read just now): how long each trial id has been seen silent
        (``None``: not silent now). Silent is RUNNING without the ``heartbeat_s`` its worker
        writes once it has recorded a first beat (:class:`tuner.driver.trial.objective.Objective`
        beats before it writes): read through Optuna's public API, no heartbeat table."""
        silent = {
            t._trial_id
            for t in trials
            if may_be_unborn(t) and decode(t).configuration.heartbeat_s is None
        }
        now = time.monotonic()
        since = self._since.setdefault(_key(backend, study_id), {})
        for trial_id in [t for t in since if t not in silent]:
            del since[trial_id]
        for trial_id in silent:
            since.setdefault(trial_id, now)
        return lambda trial_id: now - since[trial_id] if trial_id in silent else None

    def left_s(self, backend: object, study_id: int, grace_s: float) -> float:
        """Seconds until the first trial seen silent has been so for ``grace_s`` (0: none)."""
        since = self._since.get(_key(backend, study_id))
        if not since:
            return 0.0
        return max(0.0, min(since.values()) + grace_s - time.monotonic())


def _key(backend: object, study_id: int) -> tuple[str, int]:
    """A study on one storage (two storages may number their studies alike)."""
    return str(getattr(backend, "url", id(backend))), study_id


_silence = _Silence()
"""This process's sightings (a worker is one process; each search starts afresh)."""
