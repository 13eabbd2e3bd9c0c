"""``tuner search`` as one library call: :func:`search` takes the command's options
(:class:`~tuner.driver.options.SearchOptions`), checks everything once, validates when asked and
runs the study (:func:`tuner.driver.study.run_search`), telling a :class:`SearchFront` as it goes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from tuner.core.errors import TunerError
from tuner.driver import study as _study
from tuner.driver import validate as _validate
from tuner.driver.observer import QuietObserver, SearchObserver
from tuner.driver.options import SearchOptions, spec_and_plan
from tuner.files import check_output

if TYPE_CHECKING:
    import optuna

    from tuner.core.devices import DevicePlan
    from tuner.core.spec import StudySpec
    from tuner.driver.children import ChildRunner
    from tuner.driver.study import SearchReport

NOISE_SCALE_NEEDS_REPLICAS = (
    "the gradient noise scale needs at least 2 replicas: not measured on 1 "
    "(no critical batch or goodput either)"
)


class SearchFront(SearchObserver, Protocol):
    """What a search tells besides its trials: the notices, the validation, the start."""

    def notice(self, message: str) -> None:
        """A line to read even when progress is not shown (the devices chosen, what will not
        be measured)."""

    def validated(self, report: dict[str, Any]) -> None:
        """``--validate``'s report (:func:`tuner.driver.validate.run_validation`); a failed one
        stops the search after this."""

    def starting(self, spec: StudySpec, plan: DevicePlan, study_name: str | None) -> None:
        """The input is checked: the workload check, then the trials, follow."""


class QuietFront(QuietObserver):
    """A :class:`SearchFront` that shows nothing."""

    def notice(self, message: str) -> None:
        pass

    def validated(self, report: dict[str, Any]) -> None:
        pass

    def starting(self, spec: StudySpec, plan: DevicePlan, study_name: str | None) -> None:
        pass


def search(
    options: SearchOptions,
    front: SearchFront | None = None,
    *,
    on_study: Callable[[optuna.Study], None] | None = None,
) -> SearchReport:
    """Run (or resume) the study ``options`` describe; return what was launched.

    Every check of the input happens once, in this order, before any child starts and before
    anything is stored: the options and the spec (:func:`~tuner.driver.options.spec_and_plan`),
    the ``--export`` path, then :func:`~tuner.driver.study.check_search_input`. With
    ``options.validate`` the validate checks run next; a failure raises :class:`TunerError`.
    ``on_study`` receives the study as soon as it is open.
    """
    front = front or QuietFront()
    spec, plan, notice = spec_and_plan(options, options.trial_timeout)
    if notice:
        front.notice(notice)
    if options.export is not None:
        check_output(options.export, "--export")

    def before_trials(runner: ChildRunner) -> None:
        _before_trials(spec, plan, options, front, runner)

    return _study.run_search(
        spec,
        plan,
        options.storage,
        study_name=options.study_name,
        trial_timeout_s=options.trial_timeout,
        heartbeat_s=options.heartbeat or None,  # 0: off
        probe=options.probe,
        baseline=options.baseline,
        observer=front,
        on_study=on_study,
        on_checked=before_trials,
    )


def _before_trials(
    spec: StudySpec,
    plan: DevicePlan,
    options: SearchOptions,
    front: SearchFront,
    runner: ChildRunner,
) -> None:
    """Once the input is checked: say what will not be measured, validate when asked, then
    say the search starts."""
    if spec.search.noise_scale and plan.num_replicas < 2:
        front.notice(NOISE_SCALE_NEEDS_REPLICAS)
    if options.validate:
        front.note("validating the multi-replica training first…")
        checks = _validate.run_validation(
            spec, plan, timeout_s=options.trial_timeout, runner=runner
        )
        front.validated(checks)
        if not checks["passed"]:
            raise TunerError("validation failed; the study was not started")
    front.starting(spec, plan, options.study_name)
