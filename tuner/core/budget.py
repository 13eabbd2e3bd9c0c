"""A search's time budget (``--budget 15m``): which run still fits, and what was left out.

Before each run (in :data:`tuner.core.plan.PHASES` order) the run's time is estimated from the
runs already measured in this invocation (:meth:`Ledger.estimate`); it starts only if it fits (a
run with nothing to go by starts). What does not fit is counted by phase, with its estimated
time, for the end's :func:`left_out_line`. Pure: the clock is passed in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tuner.core.progress import format_budget, format_duration

BUDGET = "budget"
"""The study attribute: :meth:`Ledger.record` of the latest budgeted or ``--quick`` search."""
LEFT_OUT_PHASES = ("baseline", "grid", "seeds", "repeats")
"""The phases a budget may cut short: the check always runs, the baseline once, the grid's
first point always (an answer needs one)."""

RunKey = tuple[int, int]
"""What a run's time is estimated by: ``(global batch, replicas)``."""


@dataclass
class Ledger:
    """One search invocation's budget: runs measured and, by phase, those left out."""

    limit_s: float
    clock: Callable[[], float]
    started: float = field(default=math.nan)
    durations: dict[RunKey, list[float]] = field(default_factory=dict)
    left_out: dict[str, int] = field(default_factory=lambda: dict.fromkeys(LEFT_OUT_PHASES, 0))
    more_s: float = 0.0
    """The estimated time of the runs left out."""

    def __post_init__(self) -> None:
        if math.isnan(self.started):
            self.started = self.clock()

    @property
    def spent_s(self) -> float:
        return self.clock() - self.started

    @property
    def left_s(self) -> float:
        return self.limit_s - self.spent_s

    def measured(self, key: RunKey, seconds: float) -> None:
        """A training at ``key`` took ``seconds``."""
        self.durations.setdefault(key, []).append(seconds)

    def estimate(self, key: RunKey) -> float | None:
        """Mean seconds at ``key``, else on its replicas, else of all runs; ``None``: none."""
        replicas = key[1]
        for pick in (lambda k: k == key, lambda k: k[1] == replicas, lambda k: True):
            times = [t for k, ts in self.durations.items() if pick(k) for t in ts]
            if times:
                return sum(times) / len(times)
        return None

    def fits(self, keys: Sequence[RunKey], reserve_s: float = 0.0) -> list[bool]:
        """Which of ``keys``, in order, fit the budget less ``reserve_s`` after the earlier fits."""
        left = self.left_s - reserve_s
        chosen = []
        for key in keys:
            need = self.estimate(key)
            ok = need is None or need <= left
            if ok and need is not None:
                left -= need
            chosen.append(ok)
        return chosen

    def admit(self, phase: str, keys: Sequence[RunKey], reserve_s: float = 0.0) -> list[bool]:
        """:meth:`fits`, with the runs that do not fit counted as left out of ``phase``."""
        chosen = self.fits(keys, reserve_s)
        for key, ok in zip(keys, chosen, strict=True):
            if not ok:
                self.leave_out(phase, [key])
        return chosen

    def total_s(self, keys: Sequence[RunKey]) -> float:
        """The estimated time of ``keys`` together (a run with nothing to go by counts 0)."""
        return sum(self.estimate(key) or 0.0 for key in keys)

    def leave_out(self, phase: str, keys: Sequence[RunKey]) -> None:
        """Count ``keys`` as runs of ``phase`` the budget left out."""
        self.left_out[phase] += len(keys)
        self.more_s += self.total_s(keys)

    @property
    def cut(self) -> bool:
        """Whether any run was left out."""
        return any(self.left_out.values())

    def record(self, line: str, tied: int | None = None) -> dict[str, Any]:
        """The :data:`BUDGET` study attribute."""
        return {
            "budget_s": round(self.limit_s, 1),
            "spent_s": round(self.spent_s, 1),
            "left_out": dict(self.left_out),
            "more_s": round(self.more_s, 1),
            "tied": tied,
            "line": line,
        }


def left_out_line(ledger: Ledger, tied: int | None) -> str:
    """``budget 15m: left out 4 repeats; 2 candidates still tied: 95 % intervals overlap; a
    larger budget (≈ 6 min more) would run them``, or ``budget 15m: nothing left out (12 min
    spent)``. ``tied``: the candidates the measurements cannot tell apart (``None``: unknown)."""
    head = f"budget {format_budget(ledger.limit_s)}"
    over = ledger.spent_s - ledger.limit_s
    if over >= 1:  # what always runs took longer than the budget (or a run outran its estimate)
        head += (
            f" (ran {format_duration(over)} over: the workload check, one baseline run and the "
            "grid's first point always run, and a run is never cut)"
        )
    if not ledger.cut:
        return f"{head}: nothing left out ({format_duration(ledger.spent_s)} spent)"
    parts = [_count(n, phase) for phase, n in ledger.left_out.items() if n]
    line = f"{head}: left out {', '.join(parts)}"
    if ledger.left_out["grid"]:
        line += " (the answer covers only the grid points that ran)"
    if ledger.left_out["seeds"]:
        line += "; seed noise not measured: --tolerance alone sets the loss tolerance"
    if tied and tied > 1:
        line += f"; {tied} candidates still tied: 95 % intervals overlap"
    more = f" (≈ {format_duration(ledger.more_s)} more)" if ledger.more_s >= 1 else ""
    return line + f"; a larger budget{more} would run them"


def _count(n: int, phase: str) -> str:
    noun = {"baseline": "baseline run", "grid": "grid point"}.get(phase, phase[:-1])
    return f"{n} {noun}" + ("" if n == 1 else "s")


def quick_line(
    gaps: Sequence[tuple[int, float]], what: str = "throughput", *, seeds: bool = False
) -> str:
    """What ``--quick`` leaves unresolved: the others' ``gaps`` to the best (``0.03``: 3 %)."""
    runs = "one run per configuration" + ("" if seeds else ", no seed runs")
    head = f"quick ({runs}): run-to-run noise not measured"
    if not gaps:
        return f"{head}; no other candidate within the loss tolerance"
    shown = ", ".join(f"#{n} {gap:.0%} behind" for n, gap in gaps)
    return (
        f"{head}, so these {what} differences from the pick are not resolved: {shown}; "
        "run without --quick for intervals"
    )
