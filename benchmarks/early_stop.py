"""Early stops of dominated trials (issue 31 item 2): the A/A false-stop rate on real training, and
the samples a 5 batch x 5 rule grid with a loss target spends with and without early stops.

    python benchmarks/early_stop.py aa [--runs 24]      # in-process Keras, about 2 s a run
    python benchmarks/early_stop.py grid                # two real `tuner search` at once, ~25 min

``aa``: trains the early-stop test workload (tests/early_stop_workloads.py: linear regression with
label noise, Adam) ``--runs`` times at batch 64 with different seeds, each evaluated after each
of 8 windows of 8,192 samples, then checks every (reference, trial) pair of runs, the noise taken
from three other runs, exactly as the worker checks a trial (TargetCheck): the fraction stopped
is the A/A false-stop rate (alpha 0.05). ``grid``: the workload of benchmarks/es_grid_workload.py
(a wide MLP learning a teacher network, compute-bound on CPU: seconds to the target), batches 32,
64, 128, 192, 256 x rules none, sqrt, linear, sqrt-adam, linear-warmup, Adam 3e-4 at 32, 16,384
samples, ``target_loss = 0.05``; one search with early stops (3 seeds: both rules) and one with
``early_stop = false`` in its spec (no seed runs under a target then), started together so that
the machine's load falls on both alike: the samples trained by all runs (trials'
``train_samples_used``, the seed runs' from their curves), and the pick of each.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _common import ROOT, tuner_cli

from tuner.core.record import decode

TESTS = ROOT / "tests"
WORKLOAD = Path(__file__).resolve().parent / "es_grid_workload.py"
SPEC = """
[study]
name = "es-grid"

[workload]
model = "es_grid_workload:build_model"
data = "es_grid_workload:load_data"
loss = "mse"
optimizer = "adam"

[search]
base_batch_size = 32
batch_multipliers = [1, 2, 4, 6, 8]
lr_rules = ["none", "sqrt", "linear", "sqrt-adam", "linear-warmup"]
base_lr = 3e-4
train_samples = 16384
target_loss = 0.05
"""
KINDS = {"early stops": ("--seeds", "3"), "every point to the end": ()}
"""Each search's flags; the second's spec turns early stops off (:data:`SPEC_OF`)."""
SPEC_OF = {"early stops": SPEC, "every point to the end": SPEC + "early_stop = false\n"}


def aa(runs: int) -> None:
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
    sys.path.insert(0, str(TESTS))
    import early_stop_workloads as workload
    import keras
    import numpy as np

    from tuner.core.dominance import DEFAULT_ALPHA, check_noise
    from tuner.core.protocol import EarlyStop
    from tuner.core.stats import effective_tolerance, relative_spread
    from tuner.core.target import CheckPlan
    from tuner.worker.target import TargetCheck

    x, y, xv, yv = workload.load_data()
    batch, windows, samples = 64, 8, 8192
    steps = samples // batch // windows
    curves = []
    mark = time.perf_counter()
    for seed in range(runs):
        keras.utils.set_random_seed(seed)
        model = workload.build_model()
        model.compile(keras.optimizers.Adam(0.05), "mse")
        data = np.random.default_rng(seed).permutation(np.concatenate([np.arange(len(x))] * 2))
        curve = []
        for k in range(windows):
            part = data[k * steps * batch : (k + 1) * steps * batch]
            model.fit(x[part], y[part], batch_size=batch, epochs=1, verbose=0, shuffle=False)
            loss = float(model.evaluate(xv, yv, verbose=0, batch_size=1024))
            curve.append([(k + 1) * steps * batch, loss])
        curves.append(curve)
    train_s = time.perf_counter() - mark
    stopped = checked = 0
    for ref, trial in itertools.permutations(range(runs), 2):
        noise = [i for i in range(runs) if i not in (ref, trial)][:3]
        finals = [curves[i][-1][1] for i in noise]
        spread = relative_spread(finals) or 0.0
        noise_samples, noise_sds = check_noise([curves[i] for i in noise])
        stop = EarlyStop(
            alpha=DEFAULT_ALPHA,
            band=effective_tolerance(0.02, spread)[0],
            noise_sd=spread,
            noise_runs=3,
            reference_trial=ref,
            reference_samples=tuple(s for s, _ in curves[ref]),
            reference_losses=tuple(v for _, v in curves[ref]),
            noise_samples=tuple(noise_samples),
            noise_sds=tuple(noise_sds),
        )
        losses = functools.partial(next, iter(v for _, v in curves[trial]))
        check = TargetCheck(CheckPlan(steps * batch, steps, windows), None, losses, stop)
        checked += 1
        stopped += not all(check() for _ in range(windows - 1))
    print(
        f"A/A: {stopped} of {checked} (reference, trial) pairs of {runs} runs stopped: "
        f"{stopped / checked:.1%} (alpha {DEFAULT_ALPHA}); training {train_s:.0f} s"
    )


def grid() -> None:
    with tempfile.TemporaryDirectory() as folder, ThreadPoolExecutor(len(KINDS)) as pool:
        folders = {}
        for index, label in enumerate(KINDS):
            folders[label] = Path(folder) / str(index)
            folders[label].mkdir()
            (folders[label] / "s.toml").write_text(SPEC_OF[label])
            shutil.copy(WORKLOAD, folders[label])  # the children import it from their folder
        started = {label: pool.submit(_search, folders[label], KINDS[label]) for label in KINDS}
        results = {label: _spent(folders[label], started[label].result()) for label in KINDS}
    on, off = results["early stops"], results["every point to the end"]
    print(
        f"samples with early stops / without: {on[0] / off[0]:.0%}; wall {on[1] / off[1]:.0%}; "
        f"same pick: {on[2:] == off[2:]}"
    )


def _search(cwd: Path, extra: tuple[str, ...]) -> float:
    wall, run = tuner_cli(
        "search", "--spec", "s.toml", "--storage", "sqlite:///s.db", "--cpu-replicas", "2",
        "--no-baseline", "--max-repeats", "1", *extra, cwd=cwd,
    )  # fmt: skip
    (cwd / "search.txt").write_text(run.stdout + run.stderr)
    return wall


def _spent(cwd: Path, wall: float) -> tuple[int, float, int, str]:
    """What one search trained, said in one line; (samples, wall, picked batch, rule)."""
    import optuna

    _, exported = tuner_cli("export", "--storage", "sqlite:///s.db", cwd=cwd)
    pick = json.loads(exported.stdout)
    study = optuna.load_study(study_name="es-grid", storage=f"sqlite:///{cwd}/s.db")
    ran = [t for t in study.get_trials() if decode(t).reuse.same_as is None]
    spent = sum(int(decode(t).result.train_samples_used or 0) for t in ran)
    seeds = [c[-1][0] for r in study.user_attrs.get("seed_noise", {}).values() for c in r["curves"]]
    rules = [decode(t).flat.get("dominance", {}).get("rule") for t in ran]
    label = "with early stops" if "seed_noise" in study.user_attrs else "every point to the end"
    print(
        f"{label}: {len(ran)} trials + {len(seeds)} seed runs trained {spent + sum(seeds):,} "
        f"samples ({sum(seeds):,} in seed runs) in {wall:.0f} s; dominated: "
        f"{rules.count('time-to-target')} by the time rule, {rules.count('loss-gap')} by the "
        f"loss gap; pick batch {pick['global_batch_size']} {pick['lr_rule']} "
        f"({pick.get('time_to_target_s') or 0:.2f} s to the target)"
    )
    for t in sorted(ran, key=lambda t: t.number):
        a = decode(t).flat
        print(
            f"  #{t.number} {a.get('global_batch_size')} {a.get('lr_rule')}: {a.get('status')} "
            f"{a.get('train_samples_used')} samples, to target {a.get('time_to_target_s')}"
        )
    return spent + int(sum(seeds)), wall, pick["global_batch_size"], pick["lr_rule"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=["aa", "grid"])
    parser.add_argument("--runs", type=int, default=24)
    args = parser.parse_args()
    print(f"load: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    aa(args.runs) if args.part == "aa" else grid()


if __name__ == "__main__":
    main()
