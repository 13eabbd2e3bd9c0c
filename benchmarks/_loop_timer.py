"""``python -m tuner`` with the trial loop timed: ``benchmarks/driver_scaling.py`` runs the CLI
through this file so that the driver's own CPU per trial is read inside the process, not guessed
from the whole run (start-up, the end's views and export are outside it).

The CPU (``time.process_time``: every thread of the driver, heartbeat included) and wall seconds
of :func:`tuner.driver.trial.loop.run_trials` are written as JSON to ``$DRIVER_SCALING_LOOP``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import tuner.driver.study as study
from tuner.cli import main

_run_trials = study.run_trials


def timed_run_trials(*args: Any, **kwargs: Any) -> Any:
    """``run_trials``, timed."""
    cpu, wall = time.process_time(), time.perf_counter()
    try:
        return _run_trials(*args, **kwargs)
    finally:
        figures = {"cpu_s": time.process_time() - cpu, "wall_s": time.perf_counter() - wall}
        with open(os.environ["DRIVER_SCALING_LOOP"], "w", encoding="utf-8") as out:
            json.dump(figures, out)


if __name__ == "__main__":
    study.run_trials = timed_run_trials  # type: ignore[assignment]
    sys.argv[0] = "tuner"
    main()
