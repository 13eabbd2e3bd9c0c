"""Driver cost per trial as the study grows: does it stay flat from 10 to 1,000 grid points?

The real ``tuner search`` CLI in a subprocess, with the instant stand-in executor
(``TUNER_TEST_INSTANT_TRIALS=1``, :mod:`tuner.driver.children._instant`): every child request is
answered at once in the driver, so the time between two trials is the driver's own (Optuna,
storage, grid bookkeeping, the objective, progress lines). Grids of N points are N/2 global batches
(64 × 1..N/2) × rules none and linear on 2 CPU replicas, ``--seeds 1 --max-repeats 1`` (so the
study holds exactly N trials; seeds and racing add runs, not per-trial cost), baseline on,
heartbeat at its default, ``--export`` written. Each run gets a fresh SQLite file, or a fresh
PostgreSQL database.

Per-trial driver time is read from the stored trials, not the wall clock: ``mean`` is (last
trial's completion − first trial's start) / N, the loop's average; ``end`` is the median gap
between consecutive completions over the last tenth of the trials (at least 5), the cost of one
trial once the study holds nearly N of them (where a quadratic driver shows). Fixed costs
(start-up, workload check, baseline, opening the study) and the one-off end (table,
recommendation, views, export) are outside both; ``after`` is that end: process exit − last
completion. ``loop CPU`` and ``loop wall`` are the trial loop's own CPU (every thread of the
driver) and wall seconds per trial, read inside the driver (``benchmarks/_loop_timer.py``): CPU
is the figure least moved by other work on a shared machine. Sizes are interleaved within each
repeat; figures are medians over repeats.

Usage: python benchmarks/driver_scaling.py [--sizes 10,100,1000] [--storages sqlite,postgres]
       [--repeats 1] [--profile DIR]    (PostgreSQL: TUNER_TEST_POSTGRES or the default URL below)
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import optuna
import sqlalchemy
from optuna.trial import TrialState

ROOT = Path(__file__).resolve().parent.parent
POSTGRES = os.environ.get(
    "TUNER_TEST_POSTGRES", "postgresql+psycopg://tuner:tuner@127.0.0.1:5432/postgres"
)
STUDY = "scaling"


def cli_args(points: int, storage: str, export: Path) -> list[str]:
    """``tuner search`` over a grid of ``points`` points (an even number)."""
    multipliers = ",".join(str(m) for m in range(1, points // 2 + 1))
    return [
        "search",
        "--cpu-replicas", "2",
        "--storage", storage,
        "--study-name", STUDY,
        "--base-batch-size", "64",
        "--batch-multipliers", multipliers,
        "--lr-rules", "none,linear",
        "--epochs", "3",
        "--seeds", "1",
        "--max-repeats", "1",
        "--export", str(export),
    ]  # fmt: skip


@contextmanager
def fresh_storage(kind: str, folder: Path) -> Iterator[str]:
    """A storage URL that holds nothing yet: a new SQLite file, or a new PostgreSQL database
    (dropped afterwards)."""
    if kind == "sqlite":
        yield f"sqlite:///{folder / 'scaling.db'}"
        return
    url = sqlalchemy.engine.make_url(POSTGRES)
    name = f"tuner_scaling_{uuid.uuid4().hex[:12]}"
    admin = sqlalchemy.create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sqlalchemy.text(f'CREATE DATABASE "{name}"'))
    try:
        yield url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(sqlalchemy.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def run(kind: str, points: int, profile: Path | None) -> dict[str, Any]:
    """One search of ``points`` points on a fresh ``kind`` storage; its figures."""
    with tempfile.TemporaryDirectory() as tmp, fresh_storage(kind, Path(tmp)) as storage:
        args = cli_args(points, storage, Path(tmp, "recommended.json"))
        python = [sys.executable]
        if profile is not None:
            profile.mkdir(parents=True, exist_ok=True)
            python += ["-m", "cProfile", "-o", str(profile / f"{kind}-{points}.prof")]
        loop = Path(tmp, "loop.json")
        env = {
            **os.environ,
            "TUNER_TEST_INSTANT_TRIALS": "1",
            "COLUMNS": "160",
            "DRIVER_SCALING_LOOP": str(loop),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        }
        started, cpu = time.time(), _children_cpu_s()
        done = subprocess.run(
            [*python, str(ROOT / "benchmarks" / "_loop_timer.py"), *args],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
        )
        ended, cpu = time.time(), _children_cpu_s() - cpu
        if done.returncode != 0:
            raise SystemExit(f"{kind} {points}: exit {done.returncode}\n{done.stderr[-3000:]}")
        storage_obj = optuna.storages.RDBStorage(storage)
        try:
            trials = optuna.load_study(study_name=STUDY, storage=storage_obj).get_trials()
        finally:
            storage_obj.engine.dispose()
        inside = json.loads(loop.read_text())
    return {
        **figures(trials, points, started, ended),
        "cpu_s": cpu,
        "loop_cpu_ms": 1000 * inside["cpu_s"] / points,
        "loop_wall_ms": 1000 * inside["wall_s"] / points,
    }


def _children_cpu_s() -> float:
    """User + system CPU seconds of this process's finished children (the search's own CPU;
    a PostgreSQL server's work is not in it)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def figures(
    trials: list[optuna.trial.FrozenTrial], points: int, started: float, ended: float
) -> dict[str, Any]:
    """Per-trial driver time (see the module) from the stored trials' start and end times."""
    if len(trials) != points or any(t.state != TrialState.COMPLETE for t in trials):
        states = sorted({t.state.name for t in trials})
        raise SystemExit(f"{points} points: {len(trials)} trials, states {states}")
    trials = sorted(trials, key=lambda t: t.number)
    first = min(t.datetime_start for t in trials if t.datetime_start is not None)
    ends = sorted(t.datetime_complete.timestamp() for t in trials if t.datetime_complete)
    gaps = [b - a for a, b in itertools.pairwise(ends)]
    tail = max(5, len(gaps) // 10)
    return {
        "mean_ms": 1000 * (ends[-1] - first.timestamp()) / points,
        "end_ms": 1000 * statistics.median(gaps[-tail:]),
        "wall_s": ended - started,
        "before_s": first.timestamp() - started,
        "after_s": ended - ends[-1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1000")
    parser.add_argument("--storages", default="sqlite,postgres")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--profile", type=Path, help="write one cProfile file per run here")
    options = parser.parse_args()
    sizes = [int(n) for n in options.sizes.split(",")]
    kinds = options.storages.split(",")
    results: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for rep in range(options.repeats):
        for kind in kinds:
            for points in sizes:
                found = run(kind, points, options.profile)
                results.setdefault((kind, points), []).append(found)
                print(
                    f"rep {rep + 1} {kind:8} {points:5} points: mean {found['mean_ms']:6.1f} "
                    f"ms/trial, end {found['end_ms']:6.1f} ms/trial, loop CPU "
                    f"{found['loop_cpu_ms']:6.1f} ms/trial, loop wall {found['loop_wall_ms']:6.1f} "
                    f"ms/trial, wall "
                    f"{found['wall_s']:6.1f} s, CPU {found['cpu_s']:6.1f} s (before the first "
                    f"trial {found['before_s']:.1f} s, after the last {found['after_s']:.1f} s)",
                    flush=True,
                )
    report(results, kinds, sizes)


def report(
    results: dict[tuple[str, int], list[dict[str, Any]]], kinds: list[str], sizes: list[int]
) -> None:
    """The table (medians over repeats) and each storage's largest/smallest ratio."""

    def median(kind: str, points: int, key: str) -> float:
        return statistics.median(r[key] for r in results[kind, points])

    keys = ("mean_ms", "end_ms", "loop_cpu_ms", "loop_wall_ms", "wall_s", "cpu_s", "before_s",
            "after_s")  # fmt: skip
    print("\n| storage | grid points | mean ms/trial | end ms/trial | loop CPU ms/trial | "
          "loop wall ms/trial | wall s | CPU s | before s | after s |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for kind in kinds:
        for points in sizes:
            cells = " | ".join(f"{median(kind, points, key):.1f}" for key in keys)
            print(f"| {kind} | {points} | {cells} |")
    small, large = min(sizes), max(sizes)
    for kind in kinds:
        mean = median(kind, large, "mean_ms") / median(kind, small, "mean_ms")
        end = median(kind, large, "end_ms") / median(kind, small, "end_ms")
        loop_cpu = median(kind, large, "loop_cpu_ms") / median(kind, small, "loop_cpu_ms")
        # CPU per added trial: the slope between the sizes, so start-up and the end cancel out.
        cpu = median(kind, large, "cpu_s") - median(kind, small, "cpu_s")
        print(
            f"{kind}: {large}/{small} points ratio: mean {mean:.2f}, end {end:.2f}, loop CPU "
            f"{loop_cpu:.2f}; driver CPU "
            f"{1000 * cpu / (large - small):.1f} ms per added trial"
        )


if __name__ == "__main__":
    main()
