"""Resuming: trials of dead workers and interrupted trials run again, once.

Which trials qualify is decided by :func:`tuner.core.trials.to_requeue`; this module only acts on
the storage.
"""

from __future__ import annotations

import contextlib
import warnings
from datetime import datetime

import optuna
from optuna.trial import FrozenTrial, TrialState

from tuner.core.trials import HEARTBEAT_S, died_unborn, to_requeue

_OF_ITS_RUN = ("status", "error", HEARTBEAT_S)
"""User attributes of one run that a queued copy does not inherit: the next run writes its own."""


def requeue_unfinished(study: optuna.Study, *, stale: bool = True) -> list[FrozenTrial]:
    """Fail trials whose worker died (stale heartbeat; Optuna's retry callback re-queues them),
    then queue again every interrupted trial whose grid point (and model configuration) has no
    other run. Returns the study's trials after that (the loop decides with them: read again
    only when something was queued). ``stale=False`` leaves the stale check to
    ``study.optimize``, which makes it as the next trial starts (the trial loop's steps)."""
    if stale:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            optuna.storages.fail_stale_trials(study)  # a no-op without heartbeat
    trials = study.get_trials(deepcopy=False)
    if _fail_unborn(study, trials):
        trials = study.get_trials(deepcopy=False)
    queued = to_requeue(trials)
    for trial in queued:
        requeue(study, trial)
    return study.get_trials(deepcopy=False) if queued else trials


def requeue(study: optuna.Study, trial: FrozenTrial) -> None:
    """Queue ``trial``'s grid point again: a WAITING copy that remembers which trial failed."""
    system_attrs = {**trial.system_attrs, "failed_trial": trial.number}
    system_attrs["retry_history"] = [*trial.system_attrs.get("retry_history", []), trial.number]
    study.add_trial(
        optuna.trial.create_trial(
            state=TrialState.WAITING,
            params=trial.params,
            distributions=trial.distributions,
            user_attrs={k: v for k, v in trial.user_attrs.items() if k not in _OF_ITS_RUN},
            system_attrs=system_attrs,
        )
    )


def _fail_unborn(study: optuna.Study, trials: list[FrozenTrial]) -> bool:
    """Fail the RUNNING trials whose worker died before their first heartbeat
    (:func:`tuner.core.trials.died_unborn`); whether there were any. Only with a heartbeat (its
    grace is the bound)."""
    backend = getattr(study._storage, "_backend", study._storage)
    grace = getattr(backend, "grace_period", None)
    if not grace:
        return False
    silent = _silent_trial_ids(backend, study._study_id)
    now = datetime.now()  # Optuna stamps datetime_start with the local naive time
    unborn = [
        trial
        for trial in trials
        if died_unborn(
            trial, now, float(grace), silent=None if silent is None else trial._trial_id in silent
        )
    ]
    for trial in unborn:
        with contextlib.suppress(optuna.exceptions.UpdateFinishedTrialError):
            study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
    return bool(unborn)


def _silent_trial_ids(backend: object, study_id: int) -> set[int] | None:
    """Ids of the study's RUNNING trials without a heartbeat, where the storage can read them
    (tuner's RDB storage); ``None`` elsewhere."""
    read = getattr(backend, "_get_silent_trial_ids", None)
    return None if read is None else set(read(study_id))
