"""A stored study, read back: load it by name, and its recommendation (below both the driver and
the views, so that each reads results the same way)."""

from __future__ import annotations

import datetime as _dt
from typing import Any

import optuna

from tuner.core.budget import BUDGET
from tuner.core.errors import ConfigError, NoCompleteTrialError, StudyNotFoundError
from tuner.core.options import named
from tuner.core.recommend import (
    DEFAULT_TIE_MARGIN,
    DEFAULT_TOLERANCE,
    default_policy,
    export_document,
    recommend,
)
from tuner.core.record import StudyRecord, decode_study
from tuner.core.spec import check_study_name
from tuner.core.trials import all_diverged, nothing_completed
from tuner.storage import mask_password, open_storage


def load_study(
    storage_url: str, study_name: str | None = None, *, storage_wait: float | None = None
) -> optuna.Study:
    """Load an existing study for reading; never creates, stamps or migrates a database or a
    study. ``None`` picks the storage's only study. A name not stored is refused with the
    study-name rule when it breaks it, else with the names stored. ``storage_wait``: seconds to
    wait for a storage out of reach (``None``: 30 s)."""
    storage = open_storage(storage_url, create=False, wait_s=storage_wait)
    names = optuna.get_all_study_names(storage=storage)
    study_name = _chosen_name(storage_url, names) if study_name is None else study_name
    if study_name not in names:
        # Checked only when absent: a study named before the rule applied to --study-name
        # can still be read.
        check_study_name(study_name, named("study_name"))
        shown = ", ".join(sorted(names)) or "none"
        raise StudyNotFoundError(
            f"no study named {study_name!r} in {mask_password(storage_url)}; studies there: {shown}"
        )
    return optuna.load_study(study_name=study_name, storage=storage)


def _chosen_name(storage_url: str, names: list[str]) -> str:
    """The one study of a storage, for commands given no ``--study-name``."""
    if len(names) == 1:
        return names[0]
    where = mask_password(storage_url)
    if not names:
        raise StudyNotFoundError(f"{where} holds no study yet; run `tuner search` first")
    raise ConfigError(
        f"{where} holds {len(names)} studies ({', '.join(sorted(names))}); "
        f"pick one with {named('study_name')}"
    )


def recommendation(
    study: optuna.Study,
    tolerance: float | None = None,
    policy: str | None = None,
    storage_url: str | None = None,
    tie_margin: float | None = None,
) -> dict[str, Any]:
    """The recommended-config JSON of a stored study (:func:`tuner.core.recommend.export_document`;
    ``storage_url``, its password masked, goes into ``provenance``). ``None`` for ``policy``: the
    default for the stored target loss; for ``tolerance`` and ``tie_margin``: the study's, else
    the defaults (the seed noise may raise the tolerance)."""
    record = decode_study(study)
    spec = record.spec or {}
    trials = study.get_trials(deepcopy=False)
    margin = _asked(tie_margin, spec.get("search", {}), "tie_margin", DEFAULT_TIE_MARGIN)
    rec = _recommend(study, record, trials, (tolerance, policy, margin))
    if record.budget:  # the answer is budget-limited, or a --quick one
        rec[BUDGET] = record.budget
    chosen = next(t for t in trials if t.number == rec["trial_number"])
    shown = None if storage_url is None else mask_password(storage_url)
    return export_document(rec, chosen, spec, shown)


def _recommend(
    study: optuna.Study,
    record: StudyRecord,
    trials: list[optuna.trial.FrozenTrial],
    choice: tuple[float | None, str | None, float],
) -> dict[str, Any]:
    """:func:`~tuner.core.recommend.recommend` over a study's trials, as ``choice`` asks."""
    tolerance, policy, tie_margin = choice
    spec = record.spec or {}
    search = spec.get("search", {})
    target = None if search.get("target_loss") is None else float(search["target_loss"])
    hypermodel = record.hypermodel
    if hypermodel:
        hypermodel = {**hypermodel, "reference": spec.get("workload", {}).get("model", "")}
    if all_diverged(trials):  # "run `tuner search` first" would send the user round in circles
        raise nothing_completed(study.study_name, trials) or AssertionError("unreachable")
    return recommend(
        trials,
        study_name=study.study_name,
        base_lr=float(search.get("base_lr", float("nan"))),
        base_batch_size=int(search.get("base_batch_size", 0)),
        versions=record.versions or {},
        baselines=record.baselines,
        probes=record.probes,
        hypermodel=hypermodel,
        created_at=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        tolerance=_asked(tolerance, search, "tolerance", DEFAULT_TOLERANCE),
        policy=default_policy(target) if policy is None else policy,
        target_loss=target,
        seed_noise=record.seed_noise,
        tie_margin=tie_margin,
    )


def _asked(given: float | None, search: dict[str, Any], key: str, default: float) -> float:
    """``given`` (a flag), else the ``key`` the study was searched with, else ``default``."""
    if given is not None:
        return given
    stored = search.get(key)
    return default if stored is None else float(stored)


def current_recommendation(study: optuna.Study) -> dict[str, Any] | None:
    """:func:`recommendation`, or ``None`` while no trial has completed."""
    try:
        return recommendation(study)
    except NoCompleteTrialError:
        return None
