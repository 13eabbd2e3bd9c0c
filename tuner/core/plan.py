"""What a search will train, phase by phase (:data:`PHASES`), how long that takes, and whether
the machine was quiet enough for its throughput figures to mean anything.

The seed runs go right after the grid's own base trial, so the seed noise is known early; the
repeats are an upper bound until racing queues them; the time comes once a training has run
(:func:`plan_line`). Pure: the caller measures the load and the durations.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from tuner.core.dominance import measures_seed_noise
from tuner.core.progress import format_budget, format_duration
from tuner.core.spec import StudySpec

PHASES = ("check", "baseline", "seeds", "grid", "repeats")
"""The phases of a search, in the order they run."""
MACHINE_LOAD = "machine_load"
"""The study attribute: :func:`load_record` of the study's busiest run (:func:`busiest`)."""
BUSY_SHARE = 0.5
"""A 1-minute load average of this share of the cores (at least 1) is busy: other work takes the
cores a trial would use, and its throughput measures the sharing, not the configuration."""


@dataclass(frozen=True)
class SearchPlan:
    """Trainings each phase will run from now; ``repeats_at_most``: the most racing can add."""

    check: int = 0
    baseline: int = 0
    grid: int = 0
    seeds: int = 0
    repeats: int = 0
    repeats_at_most: int = 0
    budget_s: float | None = None
    """The search's ``--budget`` in seconds (``None``: none)."""

    def counts(self) -> dict[str, int]:
        """Each phase's trainings, in :data:`PHASES` order."""
        return {phase: getattr(self, phase) for phase in PHASES}

    @property
    def total(self) -> int:
        """The trainings known to come (repeats: those queued)."""
        return sum(self.counts().values())

    @property
    def at_most(self) -> int:
        """The trainings if racing repeats all it may."""
        return self.total + max(0, self.repeats_at_most - self.repeats)

    def with_phase(self, phase: str, trainings: int) -> SearchPlan:
        """The plan once ``phase`` is known to run ``trainings`` from now; repeats revised by
        racing keep their bound (never below what is queued), until racing queues none."""
        if phase not in PHASES:
            raise ValueError(f"unknown phase {phase!r}")
        if phase == "repeats":  # none queued: the race is over, its bound with it
            bound = max(self.repeats_at_most, trainings) if trainings else 0
            return replace(self, repeats=trainings, repeats_at_most=bound)
        return replace(self, **{phase: trainings})

    def one_started(self, phase: str, left: int | None = None) -> SearchPlan:
        """The plan once a training of ``phase`` has started: one fewer to come, or ``left``
        where the caller counts them (a trial's position); a repeat uses up the bound too."""
        n = max(0, self.counts()[phase] - 1 if left is None else left)
        if phase == "repeats":
            return replace(self, repeats=n, repeats_at_most=max(n, self.repeats_at_most - 1))
        return replace(self, **{phase: n})


def plan_of(spec: StudySpec, grid_size: int, baseline_runs: int) -> SearchPlan:
    """A new study's plan: one check, ``baseline_runs``, ``grid_size`` grid points, the seeds
    beyond the grid's base trial, and up to ``max_repeats - 1`` repeats of each grid point."""
    search = spec.search
    joint = search.grid.joint
    most = search.decision.max_repeats
    seeds = search.decision.seeds - 1 if measures_seed_noise(search) else 0
    repeats = 0 if joint or most < 2 else grid_size * (most - 1)
    return SearchPlan(
        check=1,
        baseline=baseline_runs,
        grid=grid_size,
        seeds=seeds,
        repeats_at_most=repeats,
        budget_s=search.decision.budget,
    )


def plan_line(
    plan: SearchPlan,
    eta_s: float | None = None,
    eta_at_most_s: float | None = None,
    head: str = "plan",
    budget_left_s: float | None = None,
) -> str:
    """``plan: 10 trainings (≤ 16 with repeats): 1 check, 3 baseline, 2 seeds, 4 grid, ≤ 6
    repeats; ≈ 6 min at this machine's speed (≤ 9 min with repeats)``, and under a budget
    whether that fits the ``budget_left_s`` (:func:`budget_clause`)."""
    counts = plan.counts()
    parts = [_count(n, phase) for phase, n in counts.items() if n and phase != "repeats"]
    bound = max(plan.repeats, plan.repeats_at_most)
    if plan.repeats and bound > plan.repeats:  # a round queued; later rounds may add more
        parts.append(f"{_count(plan.repeats, 'repeats')} (≤ {bound})")
    elif bound > plan.repeats:
        parts.append(f"≤ {bound} repeats")
    elif plan.repeats:
        parts.append(_count(plan.repeats, "repeats"))
    head = f"{head}: {plan.total} training" + ("" if plan.total == 1 else "s")
    if plan.at_most > plan.total:
        head += f" (≤ {plan.at_most} with repeats)"
    line = f"{head}: {', '.join(parts) or 'nothing to train'}"
    if eta_s is None:
        line += "; the time is estimated once a training has run"
    else:
        line += f"; ≈ {format_duration(eta_s)} at this machine's speed"
        if eta_at_most_s is not None and eta_at_most_s > eta_s:
            line += f" (≤ {format_duration(eta_at_most_s)} with repeats)"
    if plan.budget_s is None:
        return line
    left = plan.budget_s if budget_left_s is None else budget_left_s
    return line + budget_clause(plan, left, eta_s, eta_at_most_s)


def budget_clause(
    plan: SearchPlan, left_s: float, eta_s: float | None, eta_at_most_s: float | None
) -> str:
    """How the plan's time meets the budget: ``; within the 15m budget`` (``, repeats as far as
    it allows``), or ``; over the 15m budget (≈ 4 min left): runs what fits, ...``."""
    budget = f"the {format_budget(plan.budget_s or 0)} budget"
    if eta_s is None or eta_s <= left_s:
        more = eta_s is not None and eta_at_most_s is not None and eta_at_most_s > left_s
        return f"; within {budget}" + (", repeats as far as it allows" if more else "")
    return (
        f"; over {budget} (≈ {format_duration(max(0.0, left_s))} left): runs what fits, the "
        "grid before seeds and repeats, and says what it left out"
    )


def _count(n: int, phase: str) -> str:
    """``1 seed``, ``2 seeds``, ``3 baseline``: a phase's count as the plan line says it."""
    if phase in ("seeds", "repeats"):
        return f"{n} {phase[:-1] if n == 1 else phase}"
    return f"{n} {phase}"


def load_record(load: float, cores: int, gpu_processes: int, measured_at: str) -> dict[str, Any]:
    """One measurement's :data:`MACHINE_LOAD`: busy at :data:`BUSY_SHARE` or GPU processes."""
    busy = load >= max(1.0, BUSY_SHARE * cores) or gpu_processes > 0
    return {
        "load": round(load, 2),
        "cores": cores,
        "gpu_processes": gpu_processes,
        "busy": busy,
        "measured_at": measured_at,
    }


def busiest(stored: dict[str, Any] | None, record: dict[str, Any]) -> dict[str, Any]:
    """What the study keeps: a busy record until a busier one comes, else the latest."""
    if stored and stored.get("busy"):
        return stored if not record["busy"] or stored.get("load", 0) > record["load"] else record
    return record


def busy_line(record: dict[str, Any] | None) -> str | None:
    """``the machine was busy (load 12 on 2 cores): ...``, or ``None`` when quiet."""
    if not record or not record.get("busy"):
        return None
    what = [f"load {record['load']:g} on {record['cores']} cores"]
    if record.get("gpu_processes"):
        what.append(f"{record['gpu_processes']} other process(es) on the GPUs")
    return f"the machine was busy ({', '.join(what)}): throughput figures are not reliable"


def load_text(record: dict[str, Any]) -> str:
    """The study's :data:`MACHINE_LOAD` as a table shows it (:func:`busy_line`, or ``quiet``)."""
    return busy_line(record) or f"quiet (load {record['load']:g} on {record['cores']} cores)"
