"""``tuner.load_study``: a stored study read back from Python, its lines naming keywords."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tuner.core.options import naming

if TYPE_CHECKING:
    import optuna


def load_study(
    storage_url: str, study_name: str | None = None, *, storage_wait: float | None = None
) -> optuna.Study:
    """:func:`tuner.results.load_study` whose lines name the keywords, not the CLI's flags."""
    from tuner.results import load_study as load

    with naming(None, keywords=True, renamed={"storage": "storage_url"}):
        return load(storage_url, study_name, storage_wait=storage_wait)
