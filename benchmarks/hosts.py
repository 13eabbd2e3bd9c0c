"""One host × 4 devices against a gang of 2 "hosts" × 2 devices on this machine: the same search
(JAX, built-in workload), its throughput per global batch and its recommendation, each run twice
in alternation so that the machine's drift falls on both (localhost: no network cost).

Usage: python benchmarks/hosts.py [ROUNDS] [--batch-multipliers 1,2,4]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

TUNER = [sys.executable, "-m", "tuner"]
COMMON = ["--backend", "jax", "--quick", "--lr-rules", "none", "--no-noise-scale"]


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _search(folder: Path, name: str, hosts: int, multipliers: str) -> dict[str, object]:
    storage = f"sqlite:///{folder / name}.db"
    args = [*COMMON, "--batch-multipliers", multipliers, "--storage", storage]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if hosts == 1:
        commands = [[*TUNER, "search", *args, "--cpu-replicas", "4"]]
    else:
        gang = [
            "--cpu-replicas",
            "2",
            "--hosts",
            str(hosts),
            "--coordinator",
            f"127.0.0.1:{_port()}",
        ]
        commands = [[*TUNER, "search", *args, *gang, "--rank", str(r)] for r in range(hosts)]
    procs = [subprocess.Popen(c, env=env, stdout=subprocess.PIPE, text=True) for c in commands]
    outputs = [proc.communicate(timeout=1800)[0] for proc in procs]
    if any(proc.returncode for proc in procs):
        sys.exit(f"{name}: a rank failed\n" + "\n".join(outputs))
    shown = subprocess.run(
        [*TUNER, "show", "--storage", storage, "--format", "json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    rows = json.loads(shown.stdout)
    trials = rows["trials"] if isinstance(rows, dict) else rows
    throughput: dict[int, list[float]] = {}
    for trial in trials:
        if trial.get("state") == "COMPLETE":
            batch = int(trial["global_batch_size"])
            throughput.setdefault(batch, []).append(float(trial["throughput"]))
    answer = next((line for line in outputs[0].splitlines() if line.startswith("Use ")), "?")
    return {"throughput": throughput, "answer": answer}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("rounds", nargs="?", type=int, default=1)
    parser.add_argument("--batch-multipliers", default="1,2,4")
    options = parser.parse_args()
    found: dict[str, list[dict[str, object]]] = {"1 host × 4": [], "2 hosts × 2": []}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(options.rounds):
            for name, hosts in (("1 host × 4", 1), ("2 hosts × 2", 2)):
                label = f"{name.replace(' ', '')}-{round_}"
                found[name].append(_search(Path(tmp), label, hosts, options.batch_multipliers))
    for name, runs in found.items():
        print(f"{name} devices:")
        batches = sorted({b for run in runs for b in run["throughput"]})  # type: ignore[attr-defined]
        for batch in batches:
            values = [v for run in runs for v in run["throughput"].get(batch, [])]  # type: ignore[attr-defined]
            print(f"  global batch {batch:>5}: {statistics.median(values):>9,.0f} samples/s "
                  f"(median of {len(values)})")  # fmt: skip
        for run in runs:
            print(f"  {run['answer']}")


if __name__ == "__main__":
    main()
