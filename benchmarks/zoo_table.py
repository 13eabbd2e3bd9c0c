"""The zoo's table (issue 28, "Done when"): every setup of ``tests/workloads`` (Keras's own
examples and guides as ``build_model``/``load_data`` pairs) searched on two CPU replicas with a
tiny budget, exported, trained by a fresh plain-Keras script, and checked by ``tuner validate``
where it applies. One row per setup: trials COMPLETE, throughput, final loss, the noise scale
taken or skipped (why), the fresh script's result, the validate result, and the first error.

Usage: python benchmarks/zoo_table.py [--only mnist_convnet,multi_io] [--no-validate]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from workloads import zoo  # noqa: E402  (tests/ first on the path)
from workloads.setups import SETUPS  # noqa: E402

COLUMNS = ("setup", "trials COMPLETE", "throughput", "final loss", "noise scale", "fresh script",
           "validate", "error")  # fmt: skip


def row(outcome: zoo.Outcome) -> list[str]:
    trials = outcome.trials
    complete = [t for t in trials if t["state"] == "COMPLETE"]
    first = complete[0] if complete else (trials[0] if trials else {})
    throughput = f"{first['throughput']:.0f}/s" if first.get("throughput") else "-"
    loss = f"{first['final_loss']:.4g}" if first.get("final_loss") is not None else "-"
    if outcome.fresh:
        fresh = f"ok, loss {outcome.fresh['losses'][-1]:.4g}"
    else:
        fresh = outcome.fresh_error or ("-" if outcome.fresh_rc is None else "failed")
    if outcome.validate_rc is None:
        validate = "n/a" if not outcome.setup.validate else "-"
    else:
        validate = f"exit {outcome.validate_rc}: {outcome.validate_line}"
    errors = [trial.get("error") for trial in trials if trial.get("error")]
    error = outcome.search_error or (errors[0] if errors else "") or outcome.export_error
    return [
        outcome.setup.id,
        f"{len(complete)}/{len(trials)}",
        throughput,
        loss,
        zoo.noise(first) if first else "-",
        fresh,
        validate,
        error,
    ]


def cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="comma-separated setup ids")
    parser.add_argument("--no-validate", action="store_true", help="skip tuner validate")
    args = parser.parse_args()
    only = {name for name in args.only.split(",") if name}
    unknown = only - {setup.id for setup in SETUPS}
    if unknown:
        parser.error(f"unknown setups: {', '.join(sorted(unknown))}")
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + " --- |" * len(COLUMNS))
    total = time.monotonic()
    for setup in SETUPS:
        if only and setup.id not in only:
            continue
        with tempfile.TemporaryDirectory(prefix=f"zoo-{setup.id}-") as folder:
            outcome = zoo.run(setup, Path(folder), with_validate=not args.no_validate)
        seconds = ", ".join(f"{step} {s:.0f} s" for step, s in outcome.seconds.items())
        print("| " + " | ".join(cell(c) for c in row(outcome)) + " |", flush=True)
        print(f"<!-- {setup.id}: {seconds} -->", file=sys.stderr, flush=True)
    print(f"\nwall time {time.monotonic() - total:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
