"""How busy the machine is before a search starts a child: the 1-minute load average against
the cores, and the compute processes other than ours on the GPUs (``nvidia-smi``, where it
exists). Stored on the study (:data:`tuner.core.plan.MACHINE_LOAD`) so the note and the export
can say that the throughput figures were measured on a busy machine."""

from __future__ import annotations

import os
import shutil
import subprocess
from datetime import UTC, datetime
from typing import Any

import optuna

from tuner.core.plan import MACHINE_LOAD, busiest, load_record
from tuner.core.record import decode_study, store_study
from tuner.storage.guarded import storage_call

_NVIDIA_SMI_TIMEOUT_S = 10.0


def measure() -> dict[str, Any]:
    """The machine's load before this search's first child (:func:`tuner.core.plan.load_record`)."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # not every platform keeps one
        load = 0.0
    cores = os.cpu_count() or 1
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    return load_record(load, cores, gpu_processes(), stamp)


def gpu_processes() -> int:
    """Compute processes on the GPUs (none ours yet); 0 without a working ``nvidia-smi``."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return 0
    try:
        done = subprocess.run(
            [smi, "--query-compute-apps=pid", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=_NVIDIA_SMI_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return 0
    if done.returncode != 0:
        return 0
    pids = {line.strip() for line in done.stdout.splitlines() if line.strip().isdigit()}
    return len(pids - {str(os.getpid())})


def store_load(study: optuna.Study, record: dict[str, Any]) -> None:
    """Keep the study's busiest measurement (:func:`tuner.core.plan.busiest`)."""
    stored = storage_call(study, decode_study, study).machine_load
    kept = busiest(stored, record)
    if kept != stored:
        storage_call(study, store_study, study, MACHINE_LOAD, kept)
