"""The one entry through which the driver asks the views to catch up with the study."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import optuna

from tuner.core.record import decode_study
from tuner.extras import DISTRIBUTION, missing_modules
from tuner.results import current_recommendation
from tuner.storage import describe_storage_error
from tuner.storage.guarded import storage_call
from tuner.views.dashboard import publish


def refresh(
    study: optuna.Study,
    rec: dict[str, Any] | None = None,
    *,
    warn: Callable[[str], None] = lambda message: None,
) -> bool:
    """Rewrite the study's dashboard note and plots from ``rec``; whether they were written. A
    refused write, or no ``dashboard`` extra, goes to ``warn``: the views are a convenience, the
    trials matter."""
    import sqlalchemy.exc

    missing = missing_modules("dashboard")
    if missing:
        warn(
            f"the dashboard note and plots were not written ({', '.join(missing)} not installed): "
            f"pip install '{DISTRIBUTION}[dashboard]', then tuner dashboard (it writes them) to "
            "browse the study in optuna-dashboard"
        )
        return False

    # Storage calls of tuner's: a search's guard waits an outage out (none when reading).
    if rec is None:
        rec = storage_call(study, current_recommendation, study)
    try:
        storage_call(study, publish, study, rec)
    except (sqlalchemy.exc.SQLAlchemyError, OSError, optuna.exceptions.StorageInternalError) as exc:
        warn(f"could not update the dashboard note and plots: {describe_storage_error(exc)}")
        return False
    return True


_NOTE_KEY = "dashboard:note_str:"  # optuna-dashboard's study system attributes (its note
_PLOT_KEY = "dashboard:plot_data:"  # in pieces, each plot in pieces)


def unpublished(storage: Any) -> list[str]:
    """The tuner studies in ``storage`` whose dashboard note or plots were never written."""
    names = []
    for summary in storage.get_all_studies():
        if "spec" not in decode_study(summary).flat:  # not tuner's: no note of ours to write
            continue
        keys = storage.get_study_system_attrs(summary._study_id)
        has_note = any(key.startswith(_NOTE_KEY) for key in keys)
        if not has_note or not any(key.startswith(_PLOT_KEY) for key in keys):
            names.append(summary.study_name)
    return names


def write_missing(
    storage: Any,
    storage_url: str,
    *,
    say: Callable[[str], None],
    warn: Callable[[str], None],
) -> None:
    """``tuner dashboard``'s first step: the note and plots of each tuner study that has none
    written; on a read-only storage, the command that writes them."""
    from tuner.storage import mask_password, storage_read_only

    names = unpublished(storage)
    read_only = storage_read_only(storage_url) if names else None
    for name in names:
        if read_only:
            warn(
                f"study {name} has no tuner note or plots, and the storage is read-only here "
                f"({read_only}): tuner export --storage {mask_password(storage_url)} "
                f"--study-name {name} --update-note writes them"
            )
            continue
        if refresh(optuna.load_study(study_name=name, storage=storage), warn=warn):
            say(f"wrote the dashboard note and plots of study {name}")
