"""The one entry through which the driver asks the views to catch up with the study."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import optuna

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
) -> None:
    """Rewrite the study's dashboard note and plots from ``rec``. A refused write, or no
    ``dashboard`` extra, goes to ``warn``: the views are a convenience, the trials matter."""
    import sqlalchemy.exc

    missing = missing_modules("dashboard")
    if missing:
        warn(
            f"the dashboard note and plots were not written ({', '.join(missing)} not installed): "
            f"pip install '{DISTRIBUTION}[dashboard]' to browse the study in optuna-dashboard"
        )
        return

    # Storage calls of tuner's: a search's guard waits an outage out (none when reading).
    if rec is None:
        rec = storage_call(study, current_recommendation, study)
    try:
        storage_call(study, publish, study, rec)
    except (sqlalchemy.exc.SQLAlchemyError, OSError, optuna.exceptions.StorageInternalError) as exc:
        warn(f"could not update the dashboard note and plots: {describe_storage_error(exc)}")
