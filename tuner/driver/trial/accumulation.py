"""``[search] accumulation = true``: a global batch that runs out of memory in one step (or is
known not to fit) is trained again as ``k`` micro-steps of ``batch / k``, ``k`` doubling until it
fits or a replica would get no example. The learning rate stays the global batch's (the update is
one step at it); the throughput is the accumulating run's. The arithmetic and attributes are
:mod:`tuner.core.accumulation`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from optuna.trial import FrozenTrial

from tuner.core import accumulation, hyperparams
from tuner.core.adaptive_sweep import SKIPPED as BRACKETED
from tuner.core.devices import DevicePlan
from tuner.core.outcome import TrialOutcome, classify
from tuner.core.spec import StudySpec
from tuner.driver.children import ChildRunner, OnEvent, trial_request
from tuner.driver.observer import SearchObserver

UNFIT = frozenset({"oom", "oom-implied"})
"""The outcomes accumulation answers."""
SKIPPED = "accumulation_skipped"
"""Trial attribute: why an out-of-memory batch was not reached by accumulation."""


class Accumulation:
    """Tries an out-of-memory grid point again with accumulation (:meth:`reach`)."""

    def __init__(
        self,
        spec: StudySpec,
        plan: DevicePlan,
        runner: ChildRunner,
        timeout_s: float,
        observer: SearchObserver,
        on_event: OnEvent,
        probed_oom: Callable[[], int | None],
    ) -> None:
        self._spec, self._plan, self._runner = spec, plan, runner
        self._timeout_s, self._observer, self._on_event = timeout_s, observer, on_event
        self._probed_oom = probed_oom
        self.failed: str | None = None
        """Why accumulation failed other than by memory (then not tried again this search)."""

    def reach(
        self,
        number: int,
        outcome: TrialOutcome,
        attrs: dict[str, Any],
        values: dict[str, Any] | None,
        stored: Sequence[FrozenTrial],
    ) -> TrialOutcome:
        """``outcome`` with the accumulation attributes; when it is out of memory, the outcome
        of the first number of micro-steps that fits (or the last one that did not)."""
        if not self._spec.search.run.accumulation or outcome.status == BRACKETED:
            return outcome  # a skipped sweep rate never ran: no micro-steps to say
        batch, replicas = int(attrs["global_batch_size"]), self._plan.num_replicas
        if outcome.status not in UNFIT:
            return _with(outcome, accumulation.attrs(batch, replicas, 1))
        if self.failed is not None:
            return _with(outcome, {SKIPPED: self.failed})
        known = accumulation.smallest_unfit(
            stored,
            self._plan.device_signature,
            hyperparams.config_key(values or {}),
            str(attrs["precision"]),
        )
        unfit = min(u for u in (known, self._probed_oom(), batch) if u is not None)
        steps = accumulation.first_steps(batch, replicas, unfit)
        reason = f"global batch {batch} does not fit in one step ({outcome.error})"
        while steps is not None:
            micro = batch // (replicas * steps)
            self._observer.note(
                f"trial {number}: {reason}; trying {steps} accumulated micro-steps of {micro} "
                "per replica"
            )
            tried = self._run(attrs, values, steps)
            tried = _with(tried, {**accumulation.attrs(batch, replicas, steps)})
            if tried.status in ("error", "crashed"):  # not the batch: how it accumulates
                why = accumulation.failure_line(str(tried.error), self._spec.workload.backend)
                self.failed = f"{steps} accumulated micro-steps failed: {why}"
                self._observer.note(f"trial {number}: {self.failed}; not tried again")
                return _with(outcome, {SKIPPED: self.failed})
            if tried.status not in UNFIT:
                return _with(tried, {accumulation.REASON: reason})
            outcome = replace(
                tried, error=f"{tried.error} (even as {steps} micro-steps of {micro} per replica)"
            )
            steps = accumulation.next_steps(batch, replicas, steps)
        return outcome

    def _run(
        self, attrs: dict[str, Any], values: dict[str, Any] | None, steps: int
    ) -> TrialOutcome:
        request = trial_request(
            self._spec,
            self._plan,
            int(attrs["global_batch_size"]),
            float(attrs["learning_rate"]),
            rule=str(attrs["lr_rule"]),
            precision=str(attrs["precision"]),
            model_hyperparameters=values,
        )
        run = self._runner.run(
            replace(request, accumulation_steps=steps),
            self._plan.child_environment(),
            self._timeout_s,
            on_event=self._on_event,
        )
        return classify(run, memory_capped=self._plan.memory_limit_bytes is not None)


def _with(outcome: TrialOutcome, attrs: dict[str, Any]) -> TrialOutcome:
    return replace(outcome, attrs={**outcome.attrs, **attrs})
