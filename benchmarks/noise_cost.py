"""Noise-scale cost: what measuring the gradient noise scale costs a trial on the built-in
workloads (2 CPU replicas, the default 8 measurement steps per epoch).

The measurement runs on separate steps at the end of each epoch, outside the timed epochs, so a
trial's throughput excludes it by construction; this script checks that (throughput with / without
the measurement, interleaved, in one run) and reports the extra wall time it adds (the
measurement's seconds over the trial's training seconds).

Usage: python benchmarks/noise_cost.py
"""

from __future__ import annotations

import statistics

from tuner.core.outcome import classify
from tuner.core.protocol import DEFAULT_TRIAL_TIMEOUT_S
from tuner.driver.children import child_runner, trial_request
from tuner.driver.setup.devices import plan_devices
from tuner.driver.setup.spec_file import load_spec

WORKLOADS = {"regression": None, "mnist-synthetic": "studies/mnist-synthetic.toml"}
REPS = 2


def trial(path: str | None, batch: int, noise: bool) -> dict:
    spec = load_spec(path, {"search.noise_scale": noise})
    plan, _ = plan_devices(None, 2, None)
    request = trial_request(spec, plan, batch, spec.search.grid.base_lr)
    outcome = classify(
        child_runner().run(request, plan.child_environment(), DEFAULT_TRIAL_TIMEOUT_S),
        memory_capped=False,
    )
    assert outcome.status == "ok", outcome
    return {"throughput": outcome.values[1], **outcome.attrs}


for name, path in WORKLOADS.items():
    base = load_spec(path).search.grid.base_batch_size
    for batch in (base, 4 * base):
        ratios, shares = [], []
        for _ in range(REPS):
            with_noise, without = trial(path, batch, True), trial(path, batch, False)
            ratios.append(with_noise["throughput"] / without["throughput"])
            timings = with_noise["timings"]
            shares.append(timings["noise_scale_s"] / (timings["training_s"] + timings["tracing_s"]))
        print(
            f"{name} batch {batch}: throughput with/without {statistics.median(ratios):.3f} "
            f"({min(ratios):.3f}-{max(ratios):.3f}); measurement "
            f"{statistics.median(shares):.1%} of training time; noise scale "
            f"{with_noise.get('gradient_noise_scale')}"
        )
