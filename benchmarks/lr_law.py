"""The measured learning-rate law against the truth (issue 32): a real `tuner search --lr-sweep 5`
on the noisy quadratic model (tuner.workloads.noisy_quadratic) on 2 CPU replicas, whose best
rate per batch is computed exactly in NumPy (its expected-loss recursion).

SGD: at each of the 5 batches (8 .. 128), is the computed lr* inside tuner's measured interval
(>= 4 of 5 wanted)? Does alpha over the small-batch regime hold 1 in its interval? Is the plateau
reported within 2x of the computed critical batch? And the study's wall and trials. Adam: alpha
with its interval (Malladi et al. 2022 predict about 0.5) and the regime (a surge or not).

Usage: python benchmarks/lr_law.py [sgd|adam|both] [full]   (from the repository root; ~15 min
each on 2 loaded cores; ``full``: every rate of the sweep, ``lr_sweep_full = true``, else the
adaptive sweep, tuner's default)

``python benchmarks/lr_law.py workloads [regression|mnist|nqm][:on|:off] ...``: `--lr-sweep 5` on
the built-in regression workload and on the keras-io MNIST convnet
(tests/workloads/mnist_convnet.py, synthetic digits), each as tuner runs it by default (``on``:
the adaptive sweep, which skips the rates that cannot be the best as ``bracketed``, with early
stops) and in full (``off``: ``lr_sweep_full = true`` and ``early_stop = false`` in the spec,
every rate trained to the end): study wall, trials, the samples the trials trained
(``train_samples_used``; the seed runs, the same in both, apart), how many stopped, which rates
were skipped, and the law exported; then each stopped rate against its final loss in the full
study (``false_stop``: within the band of the best at its batch after all), and each skipped rate
likewise (``false_skip``: no worse than the best at its batch there, so the skip may have hidden
lr*).
``stops NAME ON_FOLDER OFF_FOLDER`` checks two kept studies again.
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

from _common import tuner_cli

from tuner.core.lr_law import BestRate, measure_law
from tuner.core.record import decode
from tuner.workloads import noisy_quadratic as nqm

BASE, MULTIPLIERS = 8, (1, 2, 4, 8, 16)
SPEC = """
[study]
name = "nqm-{optimizer}"

[workload]
model = "tuner.workloads.noisy_quadratic:build_model"
data = "tuner.workloads.noisy_quadratic:load_data"
loss = "mse"
optimizer = "{optimizer}"

[search]
base_batch_size = {base}
batch_multipliers = {multipliers}
lr_rules = ["none", "linear", "sqrt"]
base_lr = {base_lr}
train_samples = {samples}
val_samples = 8192
lr_sweep = 5
"""
BASE_LR = {"sgd": 0.15, "adam": 0.05}


def search(optimizer: str, workdir: Path, full: bool = False) -> tuple[float, dict[str, Any], int]:
    """Run the study (``full``: every rate of the sweep, ``lr_sweep_full``); its wall seconds,
    the exported JSON and the number of trials."""
    text = SPEC.format(
        optimizer=optimizer,
        base=BASE,
        multipliers=list(MULTIPLIERS),
        base_lr=BASE_LR[optimizer],
        samples=nqm.TRAIN_SAMPLES,
    ) + ("lr_sweep_full = true\n" if full else "")
    (workdir / "nqm.toml").write_text(text, encoding="utf-8")
    args = ["search", "--spec", "nqm.toml", "--storage", "sqlite:///nqm.db", "--cpu-replicas"]
    args += ["2", "--no-baseline", "--no-noise-scale", "--max-repeats", "1", "--export", "r.json"]
    wall, done = tuner_cli(*args, cwd=workdir)
    rec = json.loads((workdir / "r.json").read_text(encoding="utf-8"))
    shown = done.stderr + done.stdout
    trials = shown.count("trial ")  # a rough count; the exact one is below
    _, listed = tuner_cli("show", "--storage", "sqlite:///nqm.db", "--all", cwd=workdir)
    trials = sum(1 for line in listed.stdout.splitlines() if line.strip()[:1].isdigit()) or trials
    print(
        json.dumps({"optimizer": optimizer, **sweep_cost(workdir / "nqm.db", f"nqm-{optimizer}")})
    )
    return wall, rec, trials


def sweep_cost(db: Path, name: str) -> dict[str, Any]:
    """The samples the grid's trials trained (a same_as copy trains nothing) and the rates the
    adaptive sweep skipped."""
    import optuna

    trials = optuna.load_study(study_name=name, storage=f"sqlite:///{db}").get_trials()
    ran = [t for t in trials if decode(t).result.train_samples_used and not _copy(t)]
    skipped = [t for t in trials if decode(t).status == "bracketed"]
    return {
        "trained": len(ran),
        "samples": sum(int(decode(t).result.train_samples_used) for t in ran),
        "bracketed": [[t.params["global_batch_size"], t.params["lr_rule"]] for t in skipped],
    }


def stars_of(law: dict[str, Any]) -> list[BestRate]:
    censored = law.get("censored_batches") or {}
    return [
        BestRate(int(b), lr, *law["lr_star_ci_by_batch"][b], "measured", censored.get(b))
        for b, lr in law["lr_star_by_batch"].items()
    ]


def report_sgd(wall: float, rec: dict[str, Any], trials: int) -> None:
    law = rec["lr_law"]
    critical = nqm.critical_batch()
    print(f"SGD: study wall {wall:.0f} s, {trials} trials; computed critical batch {critical:.1f}")
    print("| batch | computed lr* | measured lr* | 95 % interval | method | inside |")
    print("| --- | --- | --- | --- | --- | --- |")
    inside = 0
    for b, lr in law["lr_star_by_batch"].items():
        lo, hi = law["lr_star_ci_by_batch"][b]
        truth = nqm.optimal_rate(int(b))
        ok = lo <= truth <= hi and b not in (law.get("censored_batches") or {})
        inside += ok
        method = law["lr_star_method_by_batch"][b]
        print(f"| {b} | {truth:.3f} | {lr:.3f} | {lo:.3f}–{hi:.3f} | {method} | {ok} |")
    print(f"inside at {inside} of {len(law['lr_star_by_batch'])} batches")
    print(f"law: {law['words']}")
    alpha, (lo, hi) = law["alpha"], law["alpha_ci"] or (math.nan, math.nan)
    print(f"alpha {alpha} ({lo}–{hi}), regime {law['regime']}: holds 1: {lo <= 1 <= hi}")
    small = [s for s in stars_of(law) if s.batch <= critical]
    below = measure_law(small)
    if below.alpha is not None:
        a = below.alpha
        print(f"alpha over batches <= {critical:.0f}: {a.value:.2f} ({a.low:.2f}–{a.high:.2f})")
    x = law.get("critical_batch")
    within = x is not None and critical / 2 <= x <= critical * 2
    print(f"plateau reported at {x}: within 2x of {critical:.1f}: {within}")
    batch, rate = rec["global_batch_size"], rec["learning_rate"]
    print(f"recommended: batch {batch}, learning rate {rate:.4g}")


def report_adam(wall: float, rec: dict[str, Any], trials: int) -> None:
    law = rec["lr_law"]
    print(f"Adam: study wall {wall:.0f} s, {trials} trials")
    for b, lr in law["lr_star_by_batch"].items():
        lo, hi = law["lr_star_ci_by_batch"][b]
        print(f"  batch {b}: lr* {lr:.4f} ({lo:.4f}–{hi:.4f}) {law['lr_star_method_by_batch'][b]}")
    print(f"law: {law['words']}")
    print(f"alpha {law['alpha']} {law['alpha_ci']}, regime {law['regime']}")


WORKLOADS = {
    "regression": (
        '[workload]\nmodel = "tuner.workloads.regression:build_model"\n'
        'data = "tuner.workloads.regression:load_data"\nloss = "mse"\noptimizer = "adam"\n',
        "[search]\nbase_batch_size = 64\nbatch_multipliers = [1, 2, 4]\n"
        'lr_rules = ["none", "sqrt", "linear"]\n'
        "base_lr = 0.005\ntrain_samples = 4096\nval_samples = 2048\nlr_sweep = 5\n",
    ),
    "nqm": (
        '[workload]\nmodel = "tuner.workloads.noisy_quadratic:build_model"\n'
        'data = "tuner.workloads.noisy_quadratic:load_data"\nloss = "mse"\noptimizer = "sgd"\n',
        '[search]\nbase_batch_size = 16\nbatch_multipliers = [1, 4]\nlr_rules = ["none"]\n'
        "base_lr = 0.3\ntrain_samples = 1024\nval_samples = 2048\nlr_sweep = 5\n",
    ),
    "mnist": (
        '[workload]\nmodel = "workloads.mnist_convnet:build_uncompiled"\n'
        'data = "lr_law_digits:load_data"\nloss = "categorical_crossentropy"\n'
        'optimizer = "adam"\n',
        "[search]\nbase_batch_size = 32\nbatch_multipliers = [1, 4]\n"
        'lr_rules = ["none", "sqrt", "linear"]\n'
        "base_lr = 0.003\ntrain_samples = 2048\nlr_sweep = 5\n",
    ),
}


DIGITS = '''"""MNIST-shaped digits (28x28x1, one-hot over 10 classes, as keras.datasets gives them)
that are not separable to a zero loss: the label is a faint stripe among ten, and 20 % of the
labels are random, so the loss has a floor (the zoo's digits reach 1e-8, where the seed runs'
relative spread is above 100 % and nothing can be compared)."""

import numpy as np


def load_data():
    rng = np.random.default_rng(0)
    n_train, n_val = 2048, 512
    y = rng.integers(0, 10, size=n_train + n_val)
    x = rng.random((n_train + n_val, 28, 28), dtype=np.float32) * 0.5
    for i, label in enumerate(y):
        x[i, :, 2 + 2 * label : 4 + 2 * label] += 0.15
    noisy = rng.random(y.size) < 0.2
    y[noisy] = rng.integers(0, 10, size=int(noisy.sum()))
    x, onehot = x[..., None], np.eye(10, dtype="float32")[y]
    return (x[:n_train], onehot[:n_train]), (x[n_train:], onehot[n_train:])
'''


def sweep_study(name: str, early_stop: bool, workdir: Path) -> dict[str, Any]:
    """One `--lr-sweep 5` study of workload ``name``: wall, trials, samples, stops, the law."""
    (workdir / "lr_law_digits.py").write_text(DIGITS, encoding="utf-8")
    workload, search_table = WORKLOADS[name]
    full = "" if early_stop else "lr_sweep_full = true\nearly_stop = false\n"
    text = f'[study]\nname = "{name}"\n\n{workload}\n{search_table}{full}'
    (workdir / "s.toml").write_text(text, encoding="utf-8")
    args = ["search", "--spec", "s.toml", "--storage", "sqlite:///s.db", "--cpu-replicas", "2"]
    args += ["--no-baseline", "--no-noise-scale", "--max-repeats", "1", "--export", "r.json"]
    wall, done = tuner_cli(*args, cwd=workdir)
    law_line = next((x for x in done.stdout.splitlines() if "learning-rate law" in x), "")
    return {**summary(name, workdir), "early_stop": early_stop, "wall_s": round(wall)} | (
        {"law_line": law_line.strip()} if law_line else {}
    )


def summary(name: str, workdir: Path) -> dict[str, Any]:
    """A finished study's trials, samples trained, stops and exported law (``workdir`` holds
    ``s.db`` and ``r.json``)."""
    import optuna

    trials = optuna.load_study(study_name=name, storage=f"sqlite:///{workdir}/s.db").get_trials()
    # a same_as trial copies a run that trained like it: it trained nothing itself
    ran = [t for t in trials if decode(t).result.train_samples_used and not _copy(t)]
    statuses = [str(decode(t).status) for t in ran]
    rec = json.loads((workdir / "r.json").read_text(encoding="utf-8"))
    return {
        "workload": name,
        "trials": len(trials),
        "trained": len(ran),
        "samples": sum(int(decode(t).result.train_samples_used) for t in ran),
        "dominated": statuses.count("dominated"),
        "diverged": statuses.count("diverged"),
        "bracketed": [
            [t.params["global_batch_size"], t.params["lr_rule"], decode(t).learning_rate]
            for t in trials
            if decode(t).status == "bracketed"
        ],
        "law": rec.get("lr_law"),
        "recommended": [rec["global_batch_size"], rec["learning_rate"]],
    }


def stops_checked(on: Path, off: Path, name: str) -> list[dict[str, Any]]:
    """Every rate the default study stopped as dominated or skipped as bracketed, beside its
    final loss in the full study (the same seed: the same run up to the stop) and the best final
    loss at its batch there: a stop is false when that final loss is within the band of the
    best; a skip when it is no worse than the best."""
    import optuna

    def load(folder: Path) -> list[Any]:
        return optuna.load_study(study_name=name, storage=f"sqlite:///{folder}/s.db").get_trials()

    finals: dict[tuple[int, str], float] = {}
    for t in load(off):
        if decode(t).status == "ok":
            finals[(t.params["global_batch_size"], t.params["lr_rule"])] = float(t.values[0])
    checked = []
    for t in load(on):
        status = decode(t).status
        if status not in ("dominated", "bracketed"):
            continue
        batch, rule = t.params["global_batch_size"], t.params["lr_rule"]
        best = min((v for (b, _), v in finals.items() if b == batch), default=float("nan"))
        final = finals.get((batch, rule), float("inf"))  # diverged without stops: worse
        if status == "bracketed":  # false when it was the best (or tied) in the full sweep
            checked.append({
                "point": [batch, rule],
                "skipped": True,
                "final_over_best": round(final / best, 3),
                "false_skip": final <= best,
            })  # fmt: skip
            continue
        evidence = decode(t).flat.get("dominance", {})
        band = float(evidence.get("band", 0.0))
        checked.append({
            "point": [batch, rule],
            "stopped_at": evidence.get("samples"),
            "final_over_best": round(final / best, 3),
            "band": round(band, 3),
            "false_stop": final <= best * (1 + band),
        })  # fmt: skip
    return checked


def _copy(trial: Any) -> bool:
    return decode(trial).reuse.same_as is not None


def workloads(names: list[str]) -> None:
    """Each workload's sweep with, then without, early stops (``regression:off``: only without);
    one JSON line per study."""
    for given in names:
        name, _, which = given.partition(":")
        folders: dict[bool, Path] = {}
        for early_stop in {"on": (True,), "off": (False,)}.get(which, (True, False)):
            # kept (its path printed): the study can be exported again, shown, browsed
            tmp = tempfile.mkdtemp(prefix=f"lr-law-{name}-{'on' if early_stop else 'off'}-")
            print(json.dumps({**sweep_study(name, early_stop, Path(tmp)), "folder": tmp}))
            sys.stdout.flush()
            folders[early_stop] = Path(tmp)
        if len(folders) == 2:
            print(
                json.dumps(
                    {"workload": name, "stops": stops_checked(folders[True], folders[False], name)}
                )
            )


def main() -> None:
    which = sys.argv[1] if len(sys.argv) > 1 else "both"
    if which == "summary":  # summary NAME FOLDER: a kept study again
        print(json.dumps(summary(sys.argv[2], Path(sys.argv[3]))))
        return
    if which == "stops":  # stops NAME ON_FOLDER OFF_FOLDER: each stop against the final loss
        on, off = Path(sys.argv[3]), Path(sys.argv[4])
        print(json.dumps(stops_checked(on, off, sys.argv[2])))
        return
    if which == "workloads":
        workloads(sys.argv[2:] or list(WORKLOADS))
        return
    for optimizer in ("sgd", "adam"):
        if which not in (optimizer, "both"):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            wall, rec, trials = search(optimizer, Path(tmp), full="full" in sys.argv[2:])
        (report_sgd if optimizer == "sgd" else report_adam)(wall, rec, trials)
        print(json.dumps({"optimizer": optimizer, "lr_law": rec["lr_law"]}))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
