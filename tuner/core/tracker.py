"""What the progress views keep while a search runs, and the ETA it gives (:class:`Tracker`).
Pure: the clock is passed in (:mod:`tuner.console.progress` draws it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tuner.core.outcome import NOT_LAUNCHED, TrialOutcome
from tuner.core.plan import SearchPlan, plan_line
from tuner.core.progress import format_duration, format_eta

Clock = Callable[[], float]


class Tracker:
    """What both views keep (``precisions``: whether lines name a trial's). The ETA: this run's
    mean training (not the check, nor a trial not launched) times the trainings the plan has
    left, less the time the running one has had."""

    def __init__(self, clock: Clock, precisions: bool = False) -> None:
        self._clock = clock
        self._precisions = precisions
        self._durations: list[float] = []
        self._params: dict[int, dict[str, Any]] = {}
        self._number: int | None = None
        self._running: str | None = None
        self._started_at = 0.0
        self._plan = SearchPlan()
        self._phase = "check"
        self._done = 0
        self._timed = False
        self._planned = False
        self._begun = clock()
        self._said: set[str] = set()

    def once(self, outcome: TrialOutcome) -> list[str]:
        """A trial's ``add_loss_note`` the first time a trial brings it: said once a search."""
        note = outcome.attrs.get("add_loss_note")
        if not isinstance(note, str) or note in self._said:
            return []
        self._said.add(note)
        return [note]

    def planned(self, plan: SearchPlan) -> None:
        self._plan, self._phase, self._planned = plan, "check", True
        self._begun = self._clock()  # a budget counts from the plan (before the first child)
        self._say(plan_line(plan))

    def phase(self, name: str, trainings: int) -> None:
        resumed = name == "grid" and trainings < self._plan.grid  # points measured before
        self._phase = name
        self._plan = self._plan.with_phase(name, trainings)
        grows = name == "repeats" and trainings > 0  # racing adds a round
        if self._planned and (grows or resumed):
            self._say(self._plan_now())

    def training_started(self, label: str) -> None:
        self._plan = self._plan.one_started(self._phase)
        self._running = label
        self._started_at = self._clock()

    def training_finished(self) -> None:
        if self._running is None:
            return
        if self._phase != "check":
            self._durations.append(self._elapsed())
        self._running = None
        self._done += 1
        self.after_training()

    def start_trial(self, number: int, position: int, total: int, params: dict[str, Any]) -> None:
        if self._phase not in ("grid", "repeats"):
            self._phase = "grid"
        self._plan = self._plan.one_started(self._phase, left=total - position)
        self._number = number
        self._running = f"trial {number}"
        self._params[number] = params
        self._started_at = self._clock()

    def _elapsed(self) -> float:
        return self._clock() - self._started_at

    def finish_trial(self, number: int, outcome: TrialOutcome) -> float | None:
        """The trial's duration (``None``: start unseen); kept for the ETA if it ran."""
        if number != self._number:
            return None
        seconds = self._elapsed()
        if outcome.status not in NOT_LAUNCHED:
            self._durations.append(seconds)
        self._number = None
        self._running = None
        self._done += 1
        return seconds

    def after_training(self) -> None:
        """After a training's line: the first timed training brings the plan's time."""
        if self._durations and self._planned and not self._timed:
            self._timed = True
            self._say(self._plan_now())

    def _plan_now(self) -> str:
        eta, most = self.eta(capped=False), self.eta(at_most=True, capped=False)
        return plan_line(self._plan, eta, most, head="left", budget_left_s=self._budget_left())

    def _budget_left(self) -> float | None:
        """Seconds of ``--budget`` left (``None`` without one)."""
        if self._plan.budget_s is None:
            return None
        return self._plan.budget_s - (self._clock() - self._begun)

    def _say(self, line: str) -> None:
        """A line of the plan (each view says it its own way)."""

    def eta(self, at_most: bool = False, capped: bool = True) -> float | None:
        """Seconds the search has left (``at_most``: with every repeat racing may add); ``capped``
        by what is left of a budget, as the search starts no run past it."""
        if not self._durations:
            return None
        mean = sum(self._durations) / len(self._durations)
        left = self._plan.at_most if at_most else self._plan.total
        running = 0.0 if self._running is None else max(0.0, mean - self._elapsed())
        budget = self._budget_left()
        if budget is not None and capped:
            return max(0.0, min(mean * left + running, budget))
        return mean * left + running

    def counts(self) -> tuple[int, int]:
        """Trainings done, and done plus running plus planned: the bar's figures."""
        total = self._done + (self._running is not None) + self._plan.total
        return self._done, total

    def eta_text(self) -> str:
        """``ETA 2 min`` (``ETA 2 min, ≤ 4 min with repeats`` while racing may add some)."""
        eta, most = self.eta(), self.eta(at_most=True)
        text = format_eta(eta)
        if eta is not None and most is not None and format_eta(most) != text:
            text += f", ≤ {format_duration(most)} with repeats"
        return text
