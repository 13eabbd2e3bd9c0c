"""``tuner validate``'s most direct evidence: every variable after N steps, one device against N
replicas, read from the files the two validation children saved.

A variable's difference is measured against how far it moved: ``‖a − b‖ / max(‖a − a₀‖, ‖b −
a₀‖)`` (``a₀`` 0 for an optimizer slot). So a right run differs by float32 reduction order only
and a wrong update by its own size, whatever the scale. The optimizer's variables count too:
doubled gradients hardly change Adam's update, but its moments are then 2× and 4× the right ones.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np


def load(path: Path) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray]]:
    """(final, initial) values by the variable's place, from a child's ``.npz``."""
    final: dict[int, np.ndarray] = {}
    initial: dict[int, np.ndarray] = {}
    with np.load(path) as arrays:
        for key in arrays.files:
            kind, _, index = key.partition("/")
            (final if kind == "final" else initial)[int(index)] = arrays[key]
    return final, initial


def compare_files(
    one: Path, many: Path, names: list[str], model_variables: int | None = None
) -> dict[str, Any]:
    """:func:`compare` of the two runs' files; ``compared: False`` where a run left none."""
    missing = [str(p) for p in (one, many) if not p.exists()]
    if missing:
        return {"compared": False, "reason": f"no weights saved ({', '.join(missing)})"}
    final_one, initial = load(one)
    final_many, _ = load(many)
    return compare(final_one, final_many, initial, names, model_variables)


def compare(
    one: Mapping[int, np.ndarray],
    many: Mapping[int, np.ndarray],
    initial: Mapping[int, np.ndarray],
    names: list[str],
    model_variables: int | None = None,
) -> dict[str, Any]:
    """The relative difference of the model's variables together and of the optimizer's (summed
    per group: one nearly-zero variable does not decide it); the largest three variables'."""
    if sorted(one) != sorted(many):
        return _mismatch(f"{len(one)} variables on one device, {len(many)} on the replicas")
    split = len(one) if model_variables is None else model_variables
    groups = {"model": [0.0, 0.0], "optimizer": [0.0, 0.0]}  # [apart², moved²]
    each = []
    for index in sorted(one):
        a, b = np.asarray(one[index], np.float64), np.asarray(many[index], np.float64)
        if a.shape != b.shape:
            return _mismatch(f"{_name(names, index)}: shape {a.shape} vs {b.shape}")
        start = np.asarray(initial.get(index, np.zeros_like(a)), np.float64)
        apart, moved = _distances(a, b, start)
        if not np.issubdtype(one[index].dtype, np.floating):  # a step counter: exact or wrong
            apart, moved = (0.0, 0.0) if apart == 0.0 else (math.inf, 1.0)
        group = groups["model" if index < split else "optimizer"]
        group[0] += apart**2
        group[1] += moved**2
        each.append((_name(names, index), _ratio(apart, moved)))
    each.sort(key=lambda item: -item[1])
    model, optimizer = (_ratio(math.sqrt(g[0]), math.sqrt(g[1])) for g in groups.values())
    return {
        "compared": True,
        "variables_compared": len(each),
        "max_relative_difference": max(model, optimizer),
        "model_relative_difference": model,
        "optimizer_relative_difference": optimizer,
        "largest": [[name, value] for name, value in each[:3]],
        "per_variable": dict(each),
    }


def _distances(a: np.ndarray, b: np.ndarray, start: np.ndarray) -> tuple[float, float]:
    """(‖a − b‖, how far the variable moved); ∞ apart for a value that is not finite."""
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return math.inf, 1.0
    moved = max(float(np.linalg.norm(a - start)), float(np.linalg.norm(b - start)))
    return float(np.linalg.norm(a - b)), moved


def _ratio(apart: float, moved: float) -> float:
    """``apart / moved``; 0 when nothing is apart (a variable that did not move, in both)."""
    return 0.0 if apart == 0.0 else apart / moved if moved > 0 else math.inf


def _mismatch(reason: str) -> dict[str, Any]:
    return {
        "compared": True,
        "variables_compared": 0,
        "max_relative_difference": math.inf,
        "model_relative_difference": math.inf,
        "optimizer_relative_difference": math.inf,
        "largest": [[reason, math.inf]],
    }


def _name(names: list[str], index: int) -> str:
    return names[index] if index < len(names) else f"variable {index}"
