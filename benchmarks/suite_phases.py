"""Where the suite's trial children spent their time: every trial stored in the SQLite studies a
test run left in pytest's base temporary folder, its phases (``timings``: process start, import,
device set-up, build, tracing, training, noise scale, evaluation, input probe, hand-back) summed
by test folder and over the whole run.

pytest keeps the base folders of its last three runs (``/tmp/pytest-of-$USER/pytest-N``); run this
right after the run you measure. Trials only: workload checks, baselines, seed runs and the tests'
own scripts store no phases, so the totals are a floor of what the children cost.

Usage: python benchmarks/suite_phases.py /tmp/pytest-of-root/pytest-N [--top 20]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import sqlite3
from pathlib import Path

from tuner.core.outcome import OUTSIDE_WALL, PHASES

KEYS = (*PHASES, *OUTSIDE_WALL, "wall_s")
"""The ``timings`` keys summed: the phases of a trial's wall, what it did outside, the wall."""


def trial_timings(db: Path) -> list[dict[str, float]]:
    """Each stored trial's ``timings`` attribute in ``db`` (``[]`` when it is no Optuna study)."""
    found = []
    with contextlib.suppress(sqlite3.Error), contextlib.closing(sqlite3.connect(db)) as conn:
        rows = conn.execute(
            "SELECT value_json FROM trial_user_attributes WHERE key = 'timings'"
        ).fetchall()
        for (value,) in rows:
            with contextlib.suppress(ValueError, TypeError):
                timings = json.loads(value)
                if isinstance(timings, dict) and "import_s" in timings:  # a real child's
                    found.append({k: float(v) for k, v in timings.items() if k in KEYS})
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", type=Path)
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    by_test: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    counts: collections.Counter[str] = collections.Counter()
    for db in args.base.rglob("*.db"):
        test = db.relative_to(args.base).parts[1] if "popen-gw" in str(db) else db.parent.name
        for timings in trial_timings(db):
            by_test[test].update(timings)
            counts[test] += 1
    total: collections.Counter[str] = collections.Counter()
    for phases in by_test.values():
        total.update(phases)
    trials = sum(counts.values())
    print(f"{trials} trials of real children; seconds over all of them (mean per trial):")
    for phase in KEYS:
        if total[phase]:
            print(f"  {phase:16s} {total[phase]:8.0f}  ({total[phase] / trials:5.2f})")
    print(f"\nthe {args.top} test folders whose trials took longest")
    print("  (wall s, trials, import s, tracing s, folder):")
    ranked = sorted(by_test.items(), key=lambda item: -item[1]["wall_s"])[: args.top]
    for test, phases in ranked:
        print(
            f"  {phases['wall_s']:6.0f} s  {counts[test]:3d}  {phases['import_s']:5.0f}  "
            f"{phases['tracing_s']:5.0f}  {test}"
        )


if __name__ == "__main__":
    main()
