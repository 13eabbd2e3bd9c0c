"""tuner search against the same grid written by hand: wall time and throughput fidelity.

The quickstart (`tuner search`, built-in workload, default spec: global batches 64 and 128 ×
rules none, linear and sqrt, 3 epochs, 2 CPU replicas, everything on: workload check, baseline,
noise scale, validation loss, seed runs, racing) in a subprocess into a fresh SQLite file, and
`hand_grid.py` (one process: a loop of `fit` calls over the same configurations, timed by epoch
callbacks), interleaved REPS times (the order alternates). Prints each rep's walls, the wall
ratio tuner / hand with its median, each configuration's throughput ratio tuner / hand (tuner's
stored trial throughput; it should be 1 within the noise), how many children tuner ran, and the
per-phase breakdown of its trials (median over the last rep's trials of their `timings`).

Each rep also runs `tuner search --quick` ("single runs": `--seeds 1 --max-repeats 1`): the
same pipeline with one run per configuration and one baseline run, the work closest to the hand
loop's; the quickstart's seed runs, baseline repeats and racing repeats are what its decisions'
intervals cost on top.

Usage: python benchmarks/vs_hand_grid.py [--reps 3] [--quick] [--kinds hand,single]
--quick: 2 epochs of 8,192 samples, one configuration (batch 64, rule none), one baseline run, one
seed: a smoke test of the script, not a measurement. --kinds: which of hand, tuner (the full
quickstart) and single (`tuner search --quick`) run; hand always does (the ratios are to it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import HERE, summary, tuner_cli

from tuner import load_study
from tuner.core.configurations import grid_point, is_same_as, unique_trials
from tuner.core.record import decode

# --quick trains 2 epochs of 8,192 samples (of the 65,536) on each side: a smoke test pays for
# the pipeline, not for a steady rate (tuner: the same 16,384 samples as a training budget).
QUICK_TUNER = ("--train-samples", "16384", "--batch-multipliers", "1", "--lr-rules", "none")
QUICK_TUNER += ("--max-repeats", "1", "--seeds", "1")
QUICK_HAND = ("--epochs", "2", "--samples", "8192", "--multipliers", "1", "--rules", "none")


def hand_grid(quick: bool) -> tuple[float, dict[tuple[int, str], float]]:
    """Run the hand-written grid; its wall and each configuration's throughput."""
    args = [sys.executable, str(HERE / "hand_grid.py"), *(QUICK_HAND if quick else ())]
    env = {"TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""}
    started = time.perf_counter()
    done = subprocess.run(
        args, capture_output=True, text=True, env={**os.environ, **env}, check=True
    )
    wall = time.perf_counter() - started
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    rates = {(r["batch"], r["rule"]): r["throughput"] for r in lines if "batch" in r}
    return wall, rates


SINGLE_RUNS = ("--quick",)  # --seeds 1 --max-repeats 1


def tuner_search(quick: bool, single: bool = False) -> tuple[float, dict[str, Any]]:
    """Run the quickstart (``single``: one run per configuration) into a fresh SQLite file; its
    wall and what the study stored."""
    with tempfile.TemporaryDirectory() as tmp:
        extra = QUICK_TUNER if quick else SINGLE_RUNS if single else ()
        args = ("search", "--storage", "sqlite:///q.db", *extra)
        wall, _ = tuner_cli(*args, cwd=Path(tmp))
        return wall, _stored(load_study(f"sqlite:///{tmp}/q.db"))


def _stored(study: Any) -> dict[str, Any]:
    """Per configuration the stored throughput, the children the search ran, the trials'
    timings."""
    trials = unique_trials(study.trials)
    rates = {grid_point(t)[:2]: t.values[1] for t in trials if t.values}
    launched = [t for t in study.trials if decode(t).timings and not is_same_as(t)]
    attrs = study.user_attrs
    baselines = sum(
        len(b.get("repeats") or ()) for b in attrs.get("baselines", {}).values()
        if not b.get("reused_from")
    )  # fmt: skip
    seeds = sum(max(0, len(s.get("seeds") or ()) - 1) for s in attrs.get("seed_noise", {}).values())
    children = {"check": 1, "baseline": baselines, "trials": len(launched), "seeds": seeds}
    # Training (fit, tracing included) of every child that stored its timings: the trials and
    # each baseline's first run (exact for single runs, where a baseline has one run).
    runs = [decode(t).timings for t in launched]
    runs += [b["timings"] for b in attrs.get("baselines", {}).values() if b.get("timings")]
    fit_s = sum(t.get("tracing_s", 0.0) + t.get("training_s", 0.0) for t in runs)
    return {
        "fit_s": fit_s,
        "rates": rates,
        "children": children,
        "timings": [decode(t).timings for t in launched],
    }


def phases(timings: list[dict[str, float]]) -> dict[str, float]:
    """The median of each phase over the trials."""
    keys = sorted({k for t in timings for k, v in t.items() if isinstance(v, int | float)})
    return {k: statistics.median(t.get(k, 0.0) for t in timings) for k in keys}


def _phase_line(timings: list[dict[str, float]]) -> str:
    """One rep's per-trial phases (medians) on one line, and how many trials timed their input
    pipeline: the others were sent an earlier trial's figure
    (:mod:`tuner.driver.reuse.input_reuse`)."""
    medians = ", ".join(f"{k} {v:.2f}" for k, v in phases(timings).items())
    probed = sum(1 for t in timings if t.get("input_probe_s", 0.0) > 0.01)
    return f"{medians}; input pipeline timed by {probed} of {len(timings)} trials"


KINDS = ("hand", "tuner", "single")


def run(kind: str, quick: bool) -> tuple[float, dict[str, Any]]:
    """One run of ``kind``: its wall and what it measured (``rates`` per configuration)."""
    if kind == "hand":
        wall, rates = hand_grid(quick)
        return wall, {"rates": rates}
    return tuner_search(quick, single=kind == "single")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--kinds", default=",".join(KINDS))
    options = parser.parse_args()
    wanted = {"hand", *options.kinds.split(",")}
    kinds = tuple(k for k in (KINDS[:2] if options.quick else KINDS) if k in wanted)
    walls: dict[str, list[float]] = {kind: [] for kind in kinds[1:]}
    per_config: dict[tuple[int, str], list[float]] = {}
    overheads: list[float] = []  # single runs: search wall / its children's summed training
    stored: dict[str, Any] = {}
    for rep in range(options.reps):
        order = kinds[rep % len(kinds) :] + kinds[: rep % len(kinds)]  # each kind leads in turn
        runs = {kind: run(kind, options.quick) for kind in order}
        hand_wall, hand_rates = runs["hand"][0], runs["hand"][1]["rates"]
        stored = runs[kinds[1]][1]
        print(f"rep {rep + 1} (order {', '.join(order)}): hand grid {hand_wall:.1f} s", flush=True)
        for kind in kinds[1:]:
            wall, found = runs[kind]
            walls[kind].append(wall / hand_wall)
            if kind == "single":
                overheads.append(wall / found["fit_s"])
            print(
                f"  tuner search{' --quick' if kind == 'single' else ''} {wall:.1f} s "
                f"({sum(found['children'].values())} children: {found['children']}); "
                f"wall ratio tuner/hand {walls[kind][-1]:.2f}"
                + (f"; overhead {overheads[-1]:.2f}" if kind == "single" else ""),
                flush=True,
            )
            print(f"    phases: {_phase_line(found['timings'])}", flush=True)
        for config, rate in hand_rates.items():
            if config in stored["rates"]:
                per_config.setdefault(config, []).append(stored["rates"][config] / rate)
        rates = ", ".join(
            f"{b}/{r} {stored['rates'].get((b, r), 0):,.0f} vs {rate:,.0f}"
            for (b, r), rate in sorted(hand_rates.items())
        )
        print(f"  samples/s tuner vs hand: {rates}", flush=True)
    for kind in kinds[1:]:
        label = "tuner search --quick" if kind == "single" else "tuner search"
        print(f"wall ratio {label} / hand: {summary(walls[kind])}")
    if overheads:
        print(f"overhead (--quick): search wall / summed training {summary(overheads)}")
    print("throughput ratio tuner/hand per configuration (fidelity; 1 within the noise):")
    for (batch, rule), ratios in sorted(per_config.items()):
        print(f"  batch {batch:>4}, rule {rule:<6}: {summary(ratios)}")
    print(f"per-trial phases, median over the last rep's {len(stored['timings'])} trials (s):")
    for key, value in phases(stored["timings"]).items():
        print(f"  {key:<16} {value:8.2f}")


if __name__ == "__main__":
    main()
