"""Repeats where the decision is close (racing), after the grid: which configurations run again,
and what a run of a configuration stores once it has several.

Stateless: every round reads the stored trials, asks :func:`tuner.core.racing.to_repeat` which
candidates are still tied and queues one repeat of each, so a stopped search resumes where it
was. Of the candidates of one computation (only the learning rate differs) only the lowest final
loss races: the loss decided the others. Two workers may queue the same repeat: time, never
correctness. A repeat another worker holds RUNNING when the race ends is not waited for (only the
heartbeat tells a live worker from a dead one): the race ends with :func:`provisional_line`.
"""

from __future__ import annotations

import logging
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from tuner.core.budget import Ledger
from tuner.core.configurations import is_complete, is_same_as, runs_of, status_of, window_rates
from tuner.core.devices import DevicePlan
from tuner.core.errors import NoCompleteTrialError
from tuner.core.outcome import TrialOutcome
from tuner.core.racing import Entry, most_decisive_first, tie_set, to_repeat
from tuner.core.recommend import candidate_entries, default_policy, higher_is_better
from tuner.core.record import decode, decode_study, encode
from tuner.core.spec import StudySpec
from tuner.core.stats import effective_tolerance, log_t_interval, throughput_interval
from tuner.core.trials import GridProgress, is_settled
from tuner.driver.observer import SearchObserver
from tuner.storage.guarded import storage_call

_log = logging.getLogger(__name__)

REPEAT_OF = "repeat_of"
REPEAT_INDEX = "repeat_index"
SAME_AS = "same_as"


@dataclass(frozen=True)
class Run:
    """One run's own measurement (not the configuration's median)."""

    throughput: float
    loss: float
    time_to_target_s: float | None
    samples_to_target: int | None = None


def is_measured(trial: FrozenTrial) -> bool:
    """Whether the trial COMPLETEd ``ok`` from a child of its own (not ``same_as`` another)."""
    return is_complete(trial) and status_of(trial) == "ok" and not is_same_as(trial)


def is_original(trial: FrozenTrial) -> bool:
    """A measured grid trial: the first run of its configuration."""
    return is_measured(trial) and decode(trial).reuse.repeat_of is None


def own_run(trial: FrozenTrial) -> Run:
    """What the trial's own child measured (its lists end with its own run)."""
    attrs = decode(trial).flat
    losses = attrs.get("repeat_losses") or [trial.values[0]]
    times = attrs.get("time_to_target_runs") or [attrs.get("time_to_target_s")]
    samples = attrs.get("samples_to_target_runs") or [attrs.get("samples_to_target")]
    own = float(attrs.get("run_throughput", trial.values[1]))
    return Run(own, float(losses[-1]), times[-1], samples[-1])


def chain(trials: Sequence[FrozenTrial], original: int) -> list[FrozenTrial]:
    """The original trial and its COMPLETE repeats, in the order they ran."""
    return sorted(
        (
            t
            for t in trials
            if is_measured(t) and (t.number == original or decode(t).reuse.repeat_of == original)
        ),
        key=lambda t: t.number,
    )


def measured(
    outcome: TrialOutcome, earlier: Sequence[FrozenTrial], *, target: bool = False
) -> TrialOutcome:
    """An ``ok`` outcome with its runs' medians, interval and time to target; others as they are."""
    if outcome.status != "ok" or outcome.values is None:
        return outcome
    loss, throughput = outcome.values
    get = outcome.attrs.get
    mine = Run(throughput, loss, get("time_to_target_s"), get("samples_to_target"))
    runs = [*map(own_run, earlier), mine]
    repeats = [run.throughput for run in runs]
    losses = [run.loss for run in runs]
    attrs = {**outcome.attrs, "run_throughput": throughput, "repeats": repeats}
    attrs["repeat_losses"] = losses
    interval = throughput_interval(repeats, window_rates(outcome.attrs))
    if interval is not None:
        attrs["throughput_ci"] = interval.as_list()
        attrs["throughput_ci_method"] = interval.method
    if target or "time_to_target_s" in outcome.attrs:
        attrs.update(_time_to_target(runs))
    values = (float(statistics.median(losses)), float(statistics.median(repeats)))
    return replace(outcome, values=values, attrs=attrs)


def _time_to_target(runs: Sequence[Run]) -> dict[str, Any]:
    """The runs' times and samples to target (``None`` for a miss), their medians and interval,
    and ``reached_target`` when any run did (a miss among hits is noise around the target)."""
    times = [run.time_to_target_s for run in runs]
    reached = [float(t) for t in times if t is not None]
    samples = [run.samples_to_target for run in runs]
    counted = [int(n) for n in samples if n is not None]
    fields: dict[str, Any] = {
        "time_to_target_runs": times,
        "samples_to_target_runs": samples,
        "reached_runs": len(reached),
        "reached_target": bool(reached),
        "time_to_target_s": statistics.median(reached) if reached else None,
        "samples_to_target": round(statistics.median(counted)) if counted else None,
    }
    interval = log_t_interval(reached, f"t over {len(reached)} runs")
    if interval is not None:
        fields["time_to_target_ci"] = interval.as_list()
    return fields


def race_entries(
    trials: Sequence[FrozenTrial], spec: StudySpec, signature: str, tolerance: float
) -> list[Entry]:
    """The recommendation's own candidates on ``signature``'s devices, as racing weighs them
    (:func:`~tuner.core.recommend.candidate_entries`); empty when none completed."""
    target = spec.search.run.target_loss
    mine = [t for t in trials if decode(t).configuration.device_signature == signature]
    try:
        return candidate_entries(mine, default_policy(target), tolerance, target_loss=target)
    except NoCompleteTrialError:  # nothing to race (e.g. no trial reached the target)
        return []


def still_tied(
    trials: Sequence[FrozenTrial], spec: StudySpec, signature: str, tolerance: float
) -> int:
    """How many candidates cannot be told from the best (best included; 1: decided, 0: none),
    of those racing decides between (:func:`~tuner.core.racing.contenders`: a rival of one
    computation, which the loss decided, is not counted)."""
    found = race_entries(trials, spec, signature, tolerance)
    policy = default_policy(spec.search.run.target_loss)
    return len(tie_set(found, higher_is_better=higher_is_better(policy))) if found else 0


def next_repeats(
    trials: Sequence[FrozenTrial], spec: StudySpec, signature: str, tolerance: float
) -> list[tuple[FrozenTrial, int]]:
    """``(original trial, repeat index)`` of each configuration to run once more now, most
    decisive first: those :func:`~tuner.core.racing.to_repeat` names among the recommendation's
    candidates, less those with a repeat queued or running (another worker's), one that ended for
    good without a result (a rerun would fail again), or twice as many attempts as repeats allowed
    (workers that keep dying)."""
    policy = default_policy(spec.search.run.target_loss)
    found = race_entries(trials, spec, signature, tolerance)
    better = higher_is_better(policy)
    wanted = to_repeat(found, spec.search.decision.max_repeats, higher_is_better=better)
    wanted = most_decisive_first(found, wanted, higher_is_better=better)
    by_number = {t.number: t for t in trials}
    chosen, most = [], 2 * spec.search.decision.max_repeats
    for number in wanted:
        rep = by_number[number]
        repeat_of = decode(rep).reuse.repeat_of
        original = by_number[int(rep.number if repeat_of is None else repeat_of)]
        attempts = [t for t in trials if decode(t).reuse.repeat_of == original.number]
        if any(_blocks(t) for t in attempts) or len(attempts) >= most:
            continue
        chosen.append((original, runs_of(rep) + 1))
    return chosen


def _blocks(trial: FrozenTrial) -> bool:
    """A repeat that is on its way, or that ended for good without a result."""
    if trial.state in (TrialState.WAITING, TrialState.RUNNING):
        return True
    return trial.state != TrialState.COMPLETE and is_settled(trial)


def running_repeats(trials: Sequence[FrozenTrial], signature: str) -> list[FrozenTrial]:
    """The repeats of configurations measured on ``signature``'s devices that a worker holds
    RUNNING (its own or, within the heartbeat grace period, a dead one's)."""
    mine = {t.number for t in trials if decode(t).configuration.device_signature == signature}
    return [
        t for t in trials if t.state == TrialState.RUNNING and decode(t).reuse.repeat_of in mine
    ]


def provisional_line(running: Sequence[FrozenTrial]) -> str:
    """The warning for a race that ends with ``running`` repeats still RUNNING elsewhere."""
    names = ", ".join(
        f"#{t.number} (run {decode(t).reuse.repeat_index or '?'} of #{decode(t).reuse.repeat_of})"
        for t in running
    )
    repeat, verb = ("repeats", "are") if len(running) > 1 else ("repeat", "is")
    return (
        f"racing: {repeat} {names} {verb} still RUNNING, in another worker or in one that died "
        "and is not yet past the heartbeat grace period; the recommendation is provisional until "
        "it finishes: run tuner search again after the grace period to finish the race"
    )


def enqueue_repeat(study: optuna.Study, original: FrozenTrial, index: int) -> None:
    """Queue a new trial of ``original``'s configuration, marked ``repeat_of`` it, with its grid
    cell (``grid_id``) as a retried trial has: the sampler neither hands it a new point nor trips
    over a queued trial without a cell."""
    cell = {k: v for k, v in original.system_attrs.items() if k in ("grid_id", "search_space")}
    repeat = optuna.trial.create_trial(
        state=TrialState.WAITING,
        params=original.params,
        distributions=original.distributions,
        user_attrs=encode({REPEAT_OF: original.number, REPEAT_INDEX: index}),
        system_attrs={**cell, "fixed_params": dict(original.params)},
    )
    storage_call(study, study.add_trial, repeat)


def applied_tolerance(study: optuna.Study, spec: StudySpec, plan: DevicePlan) -> tuple[float, str]:
    """The loss tolerance racing applies on ``plan``'s devices, and why."""
    noise = (storage_call(study, decode_study, study).seed_noise or {}).get(
        plan.device_signature, {}
    )
    spread = noise.get("spread")
    tolerance, source = effective_tolerance(spec.search.decision.tolerance, spread)
    measured_text = (
        f"final losses vary {spread:.1%} between {len(noise.get('seeds', []))} seeds"
        if spread is not None
        else "seed noise not measured"
    )
    return tolerance, (
        f"loss tolerance {tolerance:.2%} from {source} ({measured_text}; "
        f"tolerance {spec.search.decision.tolerance:.2%})"
    )


def race(
    study: optuna.Study,
    spec: StudySpec,
    plan: DevicePlan,
    grid: Sequence[tuple[Any, ...]],
    *,
    run_one: Callable[[], None],
    extend: Callable[[int], None],
    observer: SearchObserver,
    ledger: Ledger | None = None,
) -> int:
    """Repeat the close candidates until they separate or reach ``max_repeats``; return how many
    repeats this call queued (off for a joint search and ``max_repeats < 2``). Under a budget a
    round queues the repeats that fit, most decisive first; a grid the budget cut short is not
    raced."""
    search = spec.search
    if search.grid.joint or search.decision.max_repeats < 2:
        return 0
    if ledger is not None and ledger.left_out["grid"]:
        observer.phase("repeats", 0)
        return 0
    tolerance, sentence = applied_tolerance(study, spec, plan)
    observer.note(sentence)
    queued, cut = 0, False
    # A bound no honest search reaches (every grid point once; per configuration, twice its
    # repeats' attempts, each queued and then run), so a storage that shows no progress cannot
    # keep this loop spinning.
    for _ in range(len(grid) * (4 * search.decision.max_repeats + 1) + 1):
        trials = storage_call(study, study.get_trials, deepcopy=False)
        if GridProgress(grid).has_unclaimed_work(trials):  # queued first, a grid point left over
            run_one()
            continue
        repeats = [] if cut else next_repeats(trials, spec, plan.device_signature, tolerance)
        if ledger is not None and repeats:
            keys = [(int(o.params["global_batch_size"]), plan.num_replicas) for o, _ in repeats]
            fits = ledger.admit("repeats", keys)
            cut = not all(fits)
            repeats = [pair for pair, ok in zip(repeats, fits, strict=True) if ok]
        if not repeats:
            observer.phase("repeats", 0)  # the race is over: no more repeats to come
            running = running_repeats(trials, plan.device_signature)
            if running:
                _log.warning("%s", provisional_line(running))
            return queued
        for original, index in repeats:
            enqueue_repeat(study, original, index)
        queued += len(repeats)
        extend(len(repeats))
        observer.phase("repeats", len(repeats))
        names = ", ".join(f"#{original.number} (run {index})" for original, index in repeats)
        observer.note(f"racing: too close to call; measuring again {names}")
    return queued
