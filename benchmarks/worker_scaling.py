"""Do several workers pay off? One grid searched by 1, 2 and 4 ``tuner search`` workers at once.

Each worker is the real ``tuner search`` CLI in its own process, all started together on one
study in one storage (a fresh PostgreSQL database by default, or a fresh SQLite file), with the
instant stand-in executor (``TUNER_TEST_INSTANT_TRIALS=1``, :mod:`tuner.driver.children._instant`)
and ``TUNER_TEST_INSTANT_SECONDS`` of sleep per training run: what runs is the whole driver —
Optuna, the storage, the grid bookkeeping, claiming points another worker has not — while the
"training" holds no CPU, as a child on its own accelerator would not hold the driver's. The grid
is ``benchmarks/driver_scaling.py``'s (N/2 global batches × rules none and linear, 2 CPU
replicas), ``--seeds 1 --max-repeats 1 --no-baseline``: exactly N trainings, none of them
sequential by design.

Per worker count: ``wall`` = the last worker's exit − the first worker's start (the study's wall,
start-up and every worker's end included); ``grid`` = the last trial's completion − the first
trial's start; ``ideal`` = N × seconds / workers; the speed-up is 1 worker's wall over this
wall. Trials beyond N are grid points two workers ran at once (Optuna's grid sampler may hand
the last points to two workers). Counts are interleaved within each repeat; figures are
medians over repeats.

Usage: python benchmarks/worker_scaling.py [--workers 1,2,4] [--points 64] [--seconds 1.0]
       [--storage postgres|sqlite] [--repeats 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import optuna
from driver_scaling import ROOT, STUDY, cli_args, fresh_storage
from optuna.trial import TrialState


def run(workers: int, points: int, seconds: float, kind: str) -> dict[str, Any]:
    """``workers`` searches of one ``points``-point study started together; their figures."""
    with tempfile.TemporaryDirectory() as tmp, fresh_storage(kind, Path(tmp)) as storage:
        env = {
            **os.environ,
            "TUNER_TEST_INSTANT_TRIALS": "1",
            "TUNER_TEST_INSTANT_SECONDS": str(seconds),
            "COLUMNS": "160",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        }
        started = time.time()
        procs = []
        for worker in range(workers):
            args = cli_args(points, storage, Path(tmp, f"rec{worker}.json"))
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "tuner", *args, "--no-baseline"],
                    cwd=tmp,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        errors = [(p.wait(), p.stderr.read() if p.stderr else "") for p in procs]
        ended = time.time()
        for code, err in errors:
            if code != 0:
                raise SystemExit(f"{workers} workers: a worker exited {code}\n{err[-3000:]}")
        storage_obj = optuna.storages.RDBStorage(storage)
        try:
            trials = optuna.load_study(study_name=STUDY, storage=storage_obj).get_trials()
        finally:
            storage_obj.engine.dispose()
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    if len(complete) < points:
        states = sorted({t.state.name for t in trials})
        raise SystemExit(f"{workers} workers: {len(complete)} of {points} complete, {states}")
    first = min(t.datetime_start.timestamp() for t in trials if t.datetime_start)
    last = max(t.datetime_complete.timestamp() for t in trials if t.datetime_complete)
    return {
        "wall_s": ended - started,
        "grid_s": last - first,
        "before_s": first - started,
        "after_s": ended - last,
        "trials": len(trials),
        "ideal_s": points * seconds / workers,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--points", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--storage", choices=("postgres", "sqlite"), default="postgres")
    parser.add_argument("--repeats", type=int, default=1)
    options = parser.parse_args()
    counts = [int(n) for n in options.workers.split(",")]
    found: dict[int, list[dict[str, Any]]] = {n: [] for n in counts}
    for rep in range(options.repeats):
        # Interleaved, each repeat in another order, so the machine's drift spreads over all.
        order = counts[rep % len(counts) :] + counts[: rep % len(counts)]
        for workers in order:
            figures = run(workers, options.points, options.seconds, options.storage)
            found[workers].append(figures)
            print(
                f"rep {rep + 1} {workers} workers: wall {figures['wall_s']:.1f} s, grid "
                f"{figures['grid_s']:.1f} s (ideal {figures['ideal_s']:.1f} s), before the first "
                f"trial {figures['before_s']:.1f} s, after the last {figures['after_s']:.1f} s, "
                f"{figures['trials']} trials",
                flush=True,
            )
    report(found, options)


def report(found: dict[int, list[dict[str, Any]]], options: argparse.Namespace) -> None:
    """The table (medians over repeats) with each count's speed-up over the fewest workers."""

    def median(workers: int, key: str) -> float:
        return statistics.median(r[key] for r in found[workers])

    one = min(found)
    print(
        f"\n{options.points} points, {options.seconds:g} s a run, {options.storage}, "
        f"{options.repeats} repeat(s), load average {os.getloadavg()[0]:.1f} at the end"
    )
    print("| workers | wall s | grid s | ideal s | trials | speed-up (wall) | speed-up (grid) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for workers in sorted(found):
        wall, grid = median(workers, "wall_s"), median(workers, "grid_s")
        print(
            f"| {workers} | {wall:.1f} | {grid:.1f} | {median(workers, 'ideal_s'):.1f} | "
            f"{median(workers, 'trials'):.0f} | {median(one, 'wall_s') / wall:.2f} | "
            f"{median(one, 'grid_s') / grid:.2f} |"
        )


if __name__ == "__main__":
    main()
