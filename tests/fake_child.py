"""A fake trial runner for fast driver tests: canned ``ChildRun`` results instead of a child.

``FakeChild`` is a :class:`tuner.driver.children.ChildRunner`: a test hands it to the driver's
entry (``run_search(..., runner=child)``) as the real runner is handed down, and it records every
request, so the test can tell which grid points were really launched.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from child_results import result_text

from tuner.core.devices import DevicePlan
from tuner.core.outcome import ChildRun
from tuner.core.probe import search_from_state, try_until_oom
from tuner.core.protocol import (
    Event,
    InspectRequest,
    ProbeAttemptEvent,
    ProbeRequest,
    ProbeResultEvent,
    Request,
    RunRequest,
)
from tuner.core.spec import SearchSpec, StudySpec, WorkloadSpec

PLAN = DevicePlan(kind="cpu", num_replicas=2)
N_TRAIN = 4096

Trial = Callable[[RunRequest], dict[str, Any]]
"""A training run's request -> the result the child would leave, flat
(:func:`child_results.result_text`)."""


def make_spec(multipliers: tuple[int, ...] = (1, 2, 4, 8), **search: Any) -> StudySpec:
    """A grid of ``64 × multipliers`` × rules none and linear (unless ``search`` names others)
    over the built-in workload; no seed runs and no racing unless ``search`` asks for them."""
    search = {"seeds": 1, "max_repeats": 1, **search}
    return StudySpec(
        name="fake",
        workload=WorkloadSpec(
            model="tuner.workloads.regression:build_model",
            data="tuner.workloads.regression:load_data",
        ),
        search=SearchSpec.from_flat(
            {
                "base_batch_size": 64,
                "batch_multipliers": multipliers,
                "lr_rules": ("none", "linear"),
                "base_lr": 1e-3,
                "epochs": 1,
                **search,
            }
        ),
    )


def ok(batch: int, **extra: Any) -> dict[str, Any]:
    """A trained trial's result: loss falls and throughput grows with the batch."""
    return {
        "status": "ok",
        "final_loss": 1.0 / batch,
        "throughput": 10.0 * batch,
        "train_loss": 2.0 / batch,
        "devices": ["/cpu:0", "/cpu:1"],
        **extra,
    }


def inspected() -> dict[str, Any]:
    """The workload check's result."""
    return {
        "status": "ok",
        "n_train": N_TRAIN,
        "n_val": 512,
        "parameters": 321,
        "versions": {"tensorflow": "fake", "keras": "fake"},
        "hypermodel": None,
    }


class FakeChild:
    """Answers the workload check with :func:`inspected` and every training run with ``trial``."""

    def __init__(self, trial: Trial) -> None:
        self.trial = trial
        self.requests: list[Any] = []
        """Every request it was sent (typed: :data:`tuner.core.protocol.Request`), in order."""

    def run(
        self,
        request: Request,
        env: dict[str, str],
        timeout_s: float,
        on_event: Callable[[Event], None] | None = None,
    ) -> ChildRun:
        self.requests.append(request)
        if isinstance(request, InspectRequest):
            result = inspected()
        elif isinstance(request, ProbeRequest) and request.probe_search is not None:
            result = self._probe(request, on_event or (lambda event: None))
        else:
            result = self.trial(request)
        return ChildRun(returncode=0, result_text=result_text(result), wall_s=0.5)

    def _probe(self, request: ProbeRequest, emit: Callable[[Event], None]) -> dict[str, Any]:
        """A probe child over the request's search: ``trial`` answers each size, as
        :mod:`tuner.worker.probe` does with real training."""
        attempts: list[dict[str, Any]] = []

        def attempt(batch: int) -> bool:
            emit(ProbeAttemptEvent(batch))
            fits = self.trial(replace(request, global_batch_size=batch))["status"] == "ok"
            attempts.append({"batch": batch, "fits": fits, "seconds": 0.1})
            emit(ProbeResultEvent(batch, fits, 0.1))
            return fits

        assert request.probe_search is not None
        search = search_from_state(dict(request.probe_search))
        try_until_oom(search, attempt, request.probe_sizes_per_child)
        return {"status": "ok", "probe": True, "attempts": attempts}

    def launched(self, mode: str = "trial") -> list[tuple[int, str | None]]:
        """``(global_batch_size, rule)`` of each request of ``mode``, in launch order."""
        return [
            (r.global_batch_size, r.rule.name if r.rule is not None else None)
            for r in self.requests
            if r.mode == mode
        ]
