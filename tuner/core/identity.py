"""What must match when a study is resumed: the stored spec less what may change between runs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_SEARCH_DEFAULTS: dict[str, Any] = {
    "model_hyperparameters": "defaults",
    "noise_scale": True,
    "noise_scale_steps": None,
    "accumulation": False,
    "warmup_epochs": 1.0,
    "warmup_steps": None,
    "train_samples": None,
    "val_samples": None,
    "target_loss": None,
    "eval_every_samples": None,
    "precisions": ["float32"],
    "lr_sweep": 0,
}
_MAY_CHANGE = (
    "trials", "seeds", "max_repeats", "tolerance", "tie_margin", "budget", "early_stop",
    "lr_sweep_full", "heartbeat", "storage_wait",
)  # fmt: skip
"""Search fields a resumed study may change: the trial budget, how sure a decision must be, and
how much of the grid runs (early stops, the adaptive sweep's skips), how it meets its storage."""


def identity_of(stored: Mapping[str, Any]) -> dict[str, Any]:
    """The resumable identity of a stored spec: all but the name, the trial budget (which may
    grow) and how sure a decision must be (seeds, repeats, tolerance), with fields added since
    the spec was stored at their defaults."""
    data = {key: value for key, value in stored.items() if key != "name"}
    search = {**_SEARCH_DEFAULTS, **dict(data.get("search", {}))}
    workload = {"dataset": None, "backend": "tensorflow", **dict(data.get("workload", {}))}
    # Unnamed (None since builds' compiles are kept) and the default named are one identity:
    # core.spec's DEFAULT_LOSS and DEFAULT_OPTIMIZER (which import this module).
    workload["loss"] = workload.get("loss") or "mse"
    workload["optimizer"] = workload.get("optimizer") or "adam"
    data["workload"] = workload
    for key in _MAY_CHANGE:
        search.pop(key, None)
    data["search"] = search
    return data
