"""Scaling: throughput on 1 device vs 2 replicas at the same per-replica batch (B = 64).

Usage: python benchmarks/scaling.py [REPS]
"""

from __future__ import annotations

import sys

from _common import summary, tuner_trial

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 3
one, two = [], []
for rep in range(reps):
    one.append(tuner_trial(batch=64, replicas=1)["throughput"])
    two.append(tuner_trial(batch=128, replicas=2)["throughput"])
    print(
        f"rep {rep + 1}: 1 device {one[-1]:,.0f}, 2 replicas {two[-1]:,.0f} samples/s", flush=True
    )
speedups = [b / a for a, b in zip(one, two, strict=True)]
print(f"speedup 2 replicas / 1 device: {summary(speedups)}")
print(f"scaling efficiency: {summary([s / 2 for s in speedups])}")
