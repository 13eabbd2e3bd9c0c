"""What a rank says when it joins, and what must be the same on every rank of a gang."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from typing import Any

from tuner._version import __version__
from tuner.core.devices import DevicePlan
from tuner.core.protocol import Workload


def identity(workload: Workload) -> str:
    """The workload as every rank must name it (shipped functions: by their reference)."""
    text = json.dumps(asdict(workload), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def hello(rank: int, hosts: int, plan: DevicePlan, workload: Workload) -> dict[str, Any]:
    """The fields of a rank's hello (:func:`mismatch` compares them with the leader's)."""
    return {
        "rank": rank,
        "hosts": hosts,
        "version": __version__,
        "local_replicas": plan.local_replicas,
        "device": f"{plan.model}, {plan.backend}",
        "workload": identity(workload),
    }


_WHAT = {
    "hosts": "--hosts",
    "version": "tuner version",
    "local_replicas": "devices per host",
    "device": "device kind",
    "workload": "workload (model, data, loss, optimizer, backend)",
}


def mismatch(ours: dict[str, Any], theirs: dict[str, Any]) -> str | None:
    """Why rank ``theirs["rank"]`` cannot join the leader's gang; ``None``: it can."""
    for key, what in _WHAT.items():
        if ours.get(key) != theirs.get(key):
            return (
                f"rank {theirs.get('rank')} differs in its {what}: {theirs.get(key)!r}, rank 0 "
                f"has {ours.get(key)!r}; every rank runs the same tuner with the same options"
            )
    return None
