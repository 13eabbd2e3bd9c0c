"""The commands that run children, one library call each: :func:`search`, :func:`probe` and
:func:`validate` take their command's options (:mod:`tuner.driver.options`), check everything
once and run, telling a :class:`Front` (a search: a :class:`SearchFront`) as they go."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from tuner.core.errors import ConfigError, TunerError
from tuner.core.options import named
from tuner.driver import study as _study
from tuner.driver.gang import GangRunner
from tuner.driver.observer import SearchObserver
from tuner.driver.options import (
    ProbeOptions,
    SearchOptions,
    ValidateOptions,
    checked_spec_and_plan,
    gang_of,
)
from tuner.driver.reuse import compile_cache
from tuner.files import check_output

if TYPE_CHECKING:
    import optuna

    from tuner.core.devices import DevicePlan
    from tuner.core.gang import Gang
    from tuner.core.spec import StudySpec
    from tuner.driver.children import ChildRunner
    from tuner.driver.study import SearchReport

NOISE_SCALE_ACROSS_HOSTS = (
    "the gradient noise scale is not measured across hosts: off for this search (no critical "
    "batch or goodput either)"
)
NOISE_SCALE_NEEDS_REPLICAS = (
    "the gradient noise scale needs at least 2 replicas: not measured on 1 "
    "(no critical batch or goodput either)"
)


class Front(Protocol):
    """What a command tells besides its result: notices and notes."""

    def notice(self, message: str) -> None:
        """A line to read even when progress is not shown (the devices chosen)."""
        return None

    def note(self, message: str) -> None:
        """A line of progress (a phase starting, a probed size)."""
        return None


class SearchFront(SearchObserver, Front, Protocol):
    """What a search tells besides its trials: the notices, what it will not measure, the
    validation, the start. Each method does nothing unless a class implements it."""

    def warning(self, message: str) -> None:
        """What the search will not measure, to read even when progress is not shown."""
        return None

    def validated(self, report: dict[str, Any]) -> None:
        """``--validate``'s report (:func:`tuner.driver.validate.run.run_validation`); a failed one
        stops the search after this."""
        return None

    def starting(self, spec: StudySpec, plan: DevicePlan, study_name: str | None) -> None:
        """The input is checked: the workload check, then the trials, follow."""
        return None


class QuietFront(SearchFront):
    """A :class:`SearchFront` (and so a :class:`Front`) that shows nothing."""


def search(
    options: SearchOptions,
    front: SearchFront | None = None,
    *,
    on_study: Callable[[optuna.Study], None] | None = None,
) -> SearchReport:
    """Run (or resume) the study ``options`` describe; return what was launched. Checked once,
    in this order, before any child starts or anything is stored: the options and the spec, the
    ``--export`` path, then :func:`~tuner.driver.study.check_search_input`; with
    ``options.validate`` the validate checks next (a failure raises :class:`TunerError`).
    ``on_study`` receives the study as soon as it is open."""
    front = front or QuietFront()
    spec, plan = checked_spec_and_plan(options, front.notice, options.trial_timeout)
    if options.export is not None:
        check_output(options.export, named("export"))
    gang = gang_of(options, spec)
    if gang.spans_hosts and spec.search.run.noise_scale:
        front.warning(NOISE_SCALE_ACROSS_HOSTS)
        run = dataclasses.replace(spec.search.run, noise_scale=False)
        spec = dataclasses.replace(spec, search=dataclasses.replace(spec.search, run=run))
    with (
        _leading(spec, plan, gang, front) as runner,
        compile_cache.activated(options.storage, spec.workload.backend, front.note),
    ):
        return _study.run_search(
            spec,
            plan,
            options.storage,
            study_name=options.study_name,
            trial_timeout_s=options.trial_timeout,
            heartbeat_s=spec.search.storage.heartbeat or None,  # 0: off
            storage_wait_s=spec.search.storage.wait,
            probe=options.probe,
            baseline=options.baseline,
            observer=front,
            on_study=on_study,
            runner=runner,
            on_checked=partial(_before_trials, spec, plan, options, front, gang_runner=runner),
        )


def follow(options: SearchOptions | ValidateOptions, front: Front | None = None) -> int | None:
    """On a follower of a gang (rank ≠ 0): run what rank 0 sends until it says the search is
    over, never opening the storage; the exit code. ``None`` on rank 0 (or one host): call
    :func:`search`. Bad input raises :class:`ConfigError` as :func:`search` does."""
    from tuner.core.gang import read_gang
    from tuner.driver import gang as gangs
    from tuner.driver.children import child_runner, workload_ref
    from tuner.driver.options import spec_and_plan
    from tuner.driver.setup.names import check_names

    # First, cheaply: on rank 0 or one host nothing here is needed (the search loads the spec).
    if read_gang(options.hosts, options.rank, options.coordinator, os.environ, "jax").leads:
        return None
    front = front or QuietFront()
    spec, plan, told = spec_and_plan(options, options.trial_timeout)
    gang = gang_of(options, spec)
    check_names(spec)
    if told:
        front.notice(told)
    workload = workload_ref(spec)
    return gangs.follow(
        gang,
        gangs.hello(gang.rank, gang.hosts, plan, workload),
        child_runner(),
        partial(gangs.own_copy, plan=plan, workload=workload),
        spec.search.storage.join_wait,
        front.notice,
    )


@contextmanager
def _leading(
    spec: StudySpec, plan: DevicePlan, gang: Gang, front: Front
) -> Iterator[ChildRunner | None]:
    """Rank 0 of a gang: the runner that sends every run across hosts to the followers, once
    every one has joined; they are told ``done`` when the block ends, ``stop`` on any error (on
    every exit path: they end their children and go). ``None`` on one host: the default runner.
    Raises :class:`ConfigError` on a follower, which follows (:func:`follow`) instead."""
    if not gang.leads:
        raise ConfigError(f"rank {gang.rank} of a gang follows rank 0: call follow(), not search()")
    if not gang.spans_hosts:
        yield None
        return
    from tuner.driver.children import child_runner, workload_ref
    from tuner.driver.gang import Leader, hello

    wait = spec.search.storage.join_wait
    leader = Leader(gang, hello(0, gang.hosts, plan, workload_ref(spec)), front.note)
    try:
        # No wait here: the input is checked first (a bad one stops before any rank is waited
        # for): a search waits once its input is checked (_before_trials), a validation at its
        # first run across hosts (GangRunner).
        front.note(f"rank 0 of {gang.hosts} listening at {gang.coordinator} for the others…")
        yield GangRunner(child_runner(), leader, wait)
    except BaseException as exc:
        leader.close("stop", str(exc) or type(exc).__name__)
        raise
    leader.close("done")


def _before_trials(
    spec: StudySpec,
    plan: DevicePlan,
    options: SearchOptions,
    front: SearchFront,
    runner: ChildRunner,
    *,
    gang_runner: ChildRunner | None = None,
) -> None:
    """Once the input is checked: wait for a gang's other ranks (``gang_runner``), say what will
    not be measured, validate when asked, then say the search starts."""
    if isinstance(gang_runner, GangRunner):
        front.note(f"waiting for the other {plan.hosts - 1} rank(s)…")
        gang_runner.leader.ready(spec.search.storage.join_wait)
    if spec.search.run.noise_scale and plan.num_replicas < 2:
        front.warning(NOISE_SCALE_NEEDS_REPLICAS)
    if options.validate:
        from tuner.driver.validate.run import run_validation  # only a search that validates

        front.note("validating the multi-replica training first…")
        checks = run_validation(spec, plan, timeout_s=options.trial_timeout, runner=runner)
        front.validated(checks)
        if not checks["passed"]:
            raise TunerError("validation failed; the study was not started")
    front.starting(spec, plan, options.study_name)


@dataclass(frozen=True)
class ProbeReport:
    """What :func:`probe` found (also stored on the study) on the devices of ``plan``."""

    found: dict[str, Any]
    plan: DevicePlan


def probe(options: ProbeOptions, front: Front | None = None) -> ProbeReport:
    """Find the largest global batch that fits on the devices ``options`` describe; store it on
    the study. Checked once, in this order, before any child starts: ``--steps`` and
    ``--resolution``, the options and the spec, then the search input."""
    front = front or QuietFront()
    if options.steps < 1 or (options.resolution is not None and options.resolution < 1):
        raise ConfigError(f"{named('steps')} and {named('resolution')} must be positive")
    spec, plan = checked_spec_and_plan(options, front.notice)
    if len(spec.search.grid.precisions) > 1:
        front.note(
            f"probing at {spec.search.grid.precisions[0]}, the first precision: a probe runs one"
        )
    found = _study.probe_study(
        spec,
        plan,
        options.storage,
        study_name=options.study_name,
        resolution=options.resolution,
        steps=options.steps,
        note=lambda message: front.note(f"  {message}"),  # each size, under the command's line
    )
    return ProbeReport(found, plan)


def validate(options: ValidateOptions, front: Front | None = None) -> dict[str, Any]:
    """Run one device against the devices ``options`` describe; return the report (``passed``
    inside). Checked once, in this order, before any child starts: ``--steps`` and
    ``--batch-size``, the ``--output`` path (the caller writes the report there), the options and
    the spec with ``--trial-timeout``, then the options against the spec."""
    from tuner.driver.validate.run import run_validation  # the search's import stays light

    front = front or QuietFront()
    if options.steps < 1 or (options.batch_size is not None and options.batch_size < 1):
        raise ConfigError(f"{named('steps')} and {named('batch_size')} must be positive")
    if options.output is not None:
        check_output(options.output, named("output"))
    spec, plan = checked_spec_and_plan(options, front.notice, options.trial_timeout)
    against = (
        f"{options.accumulation} accumulated micro-steps against one step at {options.accumulation}"
        " × the batch"
        if options.accumulation
        else "against one device"
    )
    front.note(
        f"validating {spec.search.run.loop_kind} on {plan.num_replicas} {plan.kind} replicas "
        f"({spec.workload.backend}): {against}…"
    )
    with _leading(spec, plan, gang_of(options, spec), front) as runner:
        return run_validation(
            spec,
            plan,
            loss_reduction=options.loss_reduction,
            global_batch=options.batch_size,
            lr_rule=options.lr_rule,
            steps=options.steps,
            timeout_s=options.trial_timeout,
            runner=runner,
            accumulation=options.accumulation,
        )
