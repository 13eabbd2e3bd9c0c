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

from tuner.core.trials import died_unborn, to_requeue


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
            user_attrs={k: v for k, v in trial.user_attrs.items() if k not in ("status", "error")},
            system_attrs=system_attrs,
        )
    )


def _fail_unborn(study: optuna.Study, trials: list[FrozenTrial]) -> bool:
    """Fail the RUNNING trials whose worker died before writing anything (no heartbeat either:
    :func:`tuner.core.trials.died_unborn`); whether there were any. Only with a heartbeat (its
    grace is the bound)."""
    grace = getattr(getattr(study._storage, "_backend", study._storage), "grace_period", None)
    if not grace:
        return False
    now = datetime.now()  # Optuna stamps datetime_start with the local naive time
    unborn = [t for t in trials if died_unborn(t, now, float(grace))]
    for trial in unborn:
        with contextlib.suppress(optuna.exceptions.UpdateFinishedTrialError):
            study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
    return bool(unborn)
