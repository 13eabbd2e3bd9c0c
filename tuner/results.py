"""A stored study, read back: load it by name, and its recommendation.

Below both the driver and the views, so that each reads results the same way.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

import optuna

from tuner.core.errors import NoCompleteTrialError, StudyNotFoundError
from tuner.core.policy import DEFAULT_TOLERANCE, POLICY
from tuner.core.recommend import recommend
from tuner.core.spec import check_study_name
from tuner.core.trials import all_diverged, nothing_completed
from tuner.storage import mask_password, open_storage


def load_study(storage_url: str, study_name: str) -> optuna.Study:
    """Load an existing study for reading; never creates, stamps or migrates a database or a
    study (see :func:`tuner.storage.open_storage`). A name that is not stored is refused with
    the study-name rule when it breaks it (``""`` among them), else with the names stored."""
    storage = open_storage(storage_url, create=False)
    names = optuna.get_all_study_names(storage=storage)
    if study_name not in names:
        # Checked only when absent: a study named before the rule applied to --study-name
        # can still be read.
        check_study_name(study_name, "--study-name")
        shown = ", ".join(sorted(names)) or "none"
        raise StudyNotFoundError(
            f"no study named {study_name!r} in {mask_password(storage_url)}; studies there: {shown}"
        )
    return optuna.load_study(study_name=study_name, storage=storage)


def recommendation(
    study: optuna.Study, tolerance: float | None = None, policy: str = POLICY
) -> dict[str, Any]:
    """The recommended-config JSON of a stored study (``policy``: one of ``POLICIES``)."""
    spec = study.user_attrs.get("spec", {})
    search = spec.get("search", {})
    hypermodel = study.user_attrs.get("hypermodel")
    if hypermodel:
        hypermodel = {**hypermodel, "reference": spec.get("workload", {}).get("model", "")}
    trials = study.get_trials(deepcopy=False)
    if all_diverged(trials):  # "run `tuner search` first" would send the user round in circles
        raise nothing_completed(study.study_name, trials) or AssertionError("unreachable")
    return recommend(
        trials,
        study_name=study.study_name,
        base_lr=float(search.get("base_lr", float("nan"))),
        base_batch_size=int(search.get("base_batch_size", 0)),
        versions=study.user_attrs.get("versions", {}),
        baselines=study.user_attrs.get("baselines"),
        probes=study.user_attrs.get("probes"),
        hypermodel=hypermodel,
        created_at=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        tolerance=DEFAULT_TOLERANCE if tolerance is None else tolerance,
        policy=policy,
    )


def current_recommendation(
    study: optuna.Study, tolerance: float | None = None
) -> dict[str, Any] | None:
    """:func:`recommendation`, or ``None`` while no trial has completed."""
    try:
        return recommendation(study, tolerance)
    except NoCompleteTrialError:
        return None
