"""What :func:`tuner.search` returns: the study, its trials as a table, the recommendation; and
``tuner.load_study``, a stored study read back."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuner.core.options import naming

if TYPE_CHECKING:
    import optuna
    import pandas

    from tuner.load import Recommendation


@dataclass(frozen=True)
class SearchResult:
    """A finished (or resumed) search, read from its storage."""

    study: optuna.Study
    """The Optuna study, as ``optuna.load_study`` would give it."""
    storage: str
    """The storage URL it lives in (``tuner show --storage`` takes it)."""
    shipped: list[str] = field(default_factory=list)
    """The functions that were shipped to the trial processes by value (cloudpickle)."""

    @property
    def trials(self) -> pandas.DataFrame:
        """Every trial, one row each, as ``tuner show --all --format csv`` lists them."""
        import pandas

        from tuner.views.records import RECORD_FIELDS, trial_record

        trials = sorted(self.study.get_trials(deepcopy=False), key=lambda t: t.number)
        return pandas.DataFrame([trial_record(t) for t in trials], columns=RECORD_FIELDS)

    @property
    def config(self) -> dict[str, Any]:
        """The recommended-config JSON, as ``tuner export`` writes it."""
        from tuner.results import recommendation

        return recommendation(self.study, storage_url=self.storage)

    @property
    def recommendation(self) -> Recommendation:
        """The recommendation as :func:`tuner.load_recommendation` reads it back."""
        from tuner.load import recommendation_from

        return recommendation_from(self.config)

    def report(self, path: str | Path = "report.html") -> Path:
        """Write the HTML report (as ``tuner report``) to ``path``; return it."""
        from tuner.extras import require_extra
        from tuner.files import check_output
        from tuner.results import current_recommendation
        from tuner.views.report import write_report

        require_extra("report", "SearchResult.report")
        output = Path(path)
        check_output(output, "report path")
        write_report(self.study, current_recommendation(self.study), output)
        return output

    def show(self) -> None:
        """Print the trials and the recommendation, as ``tuner search`` ends."""
        from tuner.console import display
        from tuner.console.pages import out
        from tuner.core.configurations import unique_trials
        from tuner.results import current_recommendation

        every = self.study.get_trials(deepcopy=False)
        shown = unique_trials(every)
        display.print_trials(out, shown, f"Study {self.study.study_name}", every=every)
        rec = current_recommendation(self.study)
        if rec is not None:
            display.print_recommendation(out, rec)


def load_study(
    storage_url: str, study_name: str | None = None, *, storage_wait: float | None = None
) -> optuna.Study:
    """:func:`tuner.results.load_study` whose lines name the keywords, not the CLI's flags."""
    from tuner.results import load_study as load

    with naming(None, keywords=True, renamed={"storage": "storage_url"}):
        return load(storage_url, study_name, storage_wait=storage_wait)
