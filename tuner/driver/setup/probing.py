"""The batch-size probe from the driver's side: children that run the probe's search, size after
size in one process until a size runs out of memory (a fresh child goes on from there). Each
size is announced before it is tried, so a child killed under a memory cap leaves it out of
memory, not unknown."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import optuna

from tuner.core.devices import DevicePlan
from tuner.core.errors import TunerError
from tuner.core.outcome import classify, read_result
from tuner.core.probe import (
    DEFAULT_PROBE_STEPS,
    GridProbe,
    ProbeSearch,
    Search,
    most_sizes_left,
    search_state,
    sizes_per_child,
)
from tuner.core.protocol import Event, ProbeAttemptEvent, ProbeResultEvent, Result
from tuner.core.record import decode_study
from tuner.core.spec import StudySpec
from tuner.driver.children import ChildRunner, first_precision, probe_request
from tuner.driver.decide.seeds import store
from tuner.storage.guarded import storage_call

PROBES = "probes"
"""The study attribute: ``{device_signature: run_probe's record}``."""


def probe_grid(
    study: optuna.Study,
    spec: StudySpec,
    plan: DevicePlan,
    n_train: int,
    *,
    runner: ChildRunner,
    note: Callable[[str], None],
) -> None:
    """Before a search's grid: bisect its sizes on ``plan``'s devices; store it on ``study``."""
    note("probing the largest global batch that fits…")
    found = run_probe(
        spec, plan, n_train, runner=runner, grid=spec.search.grid.global_batch_sizes, note=note
    )
    store(study, PROBES, plan, found)


def probed_oom(study: optuna.Study, plan: DevicePlan) -> int | None:
    """The smallest global batch a probe of ``plan``'s devices found out of memory, if any."""
    probes = storage_call(study, decode_study, study).probes or {}
    found: int | None = probes.get(plan.device_signature, {}).get("smallest_oom_batch")
    return found


def run_probe(
    spec: StudySpec,
    plan: DevicePlan,
    n_train: int,
    *,
    runner: ChildRunner,
    resolution: int | None = None,
    grid: tuple[int, ...] | None = None,
    steps: int = DEFAULT_PROBE_STEPS,
    timeout_s: float = 600.0,
    note: Callable[[str], None] = lambda message: None,
) -> dict[str, Any]:
    """Find the largest global batch that fits on ``plan``'s devices with short runs: bisection
    over ``grid`` when given, else doubling from the base batch until out-of-memory, then
    bisection to ``resolution`` samples (default: an eighth of the base batch); ``timeout_s`` per
    size. Returns the record stored on the study (``launches``, one ``attempts`` per size)."""
    if grid:
        search: Search = GridProbe(grid)
    else:
        base, step = spec.search.grid.base_batch_size, plan.num_replicas
        start, fine = max(step, base // step * step), resolution or max(step, base // 8)
        search = ProbeSearch(start=start, limit=n_train, step=step, resolution=fine)
    attempts: list[dict[str, Any]] = []
    launches = 0
    started = time.perf_counter()
    while search.next_batch() is not None:
        launches += 1
        for attempt in _probe_child(spec, plan, search, steps, timeout_s, note, runner):
            search.record(attempt["batch"], attempt["fits"])
            attempts.append(attempt)
    return {
        "device_signature": plan.device_signature,
        "largest_fitting_batch": search.largest_fitting,
        "smallest_oom_batch": search.smallest_failing,
        "precision": first_precision(spec),
        "resolution": search.resolution,
        "limit": n_train,
        "steps": steps,
        "launches": launches,
        "attempts": attempts,
        "wall_s": time.perf_counter() - started,
    }


def _probe_child(
    spec: StudySpec,
    plan: DevicePlan,
    search: Search,
    steps: int,
    timeout_s: float,
    note: Callable[[str], None],
    runner: ChildRunner,
) -> list[dict[str, Any]]:
    """One child that goes on with ``search``: the sizes it tried. The size it died on by a
    signal under a memory cap does not fit; any other failure raises :class:`TunerError`."""
    first = search.next_batch()
    assert first is not None
    most = sizes_per_child(plan.kind, plan.memory_limit_bytes is not None, plan.hosts)
    lr = spec.search.grid.base_lr  # the probe measures memory: rule "none"
    request = probe_request(
        spec, plan, first, lr, steps=steps, search_state=search_state(search), sizes_per_child=most
    )
    events = _ProbeEvents(note)
    run = runner.run(
        request,
        plan.child_environment(),
        timeout_s * min(most or most_sizes_left(search), most_sizes_left(search)),
        on_event=events,
    )
    outcome = classify(run, memory_capped=plan.memory_limit_bytes is not None)
    if outcome.status == "ok":
        read = read_result(run.result_text)  # ok: a result classify has read already
        attempts: list[dict[str, Any]] = (
            read.payload.get("attempts", []) if isinstance(read, Result) else []
        )
        if not attempts:
            raise TunerError(f"the probe child tried no global batch (first: {first})")
        return attempts
    dying = events.trying
    if outcome.status == "oom" and dying is not None:
        note(f"probe: global batch {dying} out of memory ({outcome.error})")
        seconds = (run.ended_at or time.time()) - events.trying_since
        lost = {"batch": dying, "fits": False, "seconds": seconds, "peak_memory_bytes": None}
        return [*events.results, {**lost, "error": outcome.error}]
    raise TunerError(
        f"probe run at global batch {dying or first} failed ({outcome.status}): {outcome.error}"
    )


class _ProbeEvents:
    """A probe child's events as they come: each size's outcome (noted at once), and the size it
    announced last without an outcome yet — the one it dies at, if it dies."""

    def __init__(self, note: Callable[[str], None]) -> None:
        self.note = note
        self.results: list[dict[str, Any]] = []
        self.trying: int | None = None
        self.trying_since = time.time()

    def __call__(self, event: Event) -> None:
        if isinstance(event, ProbeAttemptEvent):
            self.trying, self.trying_since = event.batch, time.time()
        elif isinstance(event, ProbeResultEvent):
            result = asdict(event)  # the record's attempt: the event's fields, by name
            self.results.append(result)
            self.trying = None
            fits = "fits" if result["fits"] else "out of memory"
            self.note(f"probe: global batch {result['batch']} {fits}")
