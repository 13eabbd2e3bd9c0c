"""Fidelity: tuner's reported throughput vs an independent plain-Keras measurement.

Same configuration (built-in regression workload, 2 CPU replicas, global batch 128, 3 epochs),
each in its own process, interleaved REPS times so drift hits both alike. Also the input-pipeline
check: plain Keras through tf.data (shuffle, batch, prefetch) vs with the batches cached.

Usage: python benchmarks/fidelity.py [REPS]
"""

from __future__ import annotations

import sys

from _common import plain_keras, summary, tuner_trial

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
ratios, tuner_rates, plain_rates, pipeline = [], [], [], []
for rep in range(reps):
    measured = tuner_trial(batch=128, replicas=2)["throughput"]
    plain = plain_keras(batch=128, replicas=2)
    cached = plain_keras(batch=128, replicas=2, cached=True)
    tuner_rates.append(measured)
    plain_rates.append(plain)
    ratios.append(measured / plain)
    pipeline.append(plain / cached)
    print(
        f"rep {rep + 1}: tuner {measured:,.0f}, plain Keras {plain:,.0f}, "
        f"cached batches {cached:,.0f} samples/s; ratio {measured / plain:.3f}",
        flush=True,
    )
print(f"tuner/plain ratio: {summary(ratios)}  (target 0.97-1.03)")
print(f"tf.data/cached ratio (input pipeline): {summary(pipeline)}")
