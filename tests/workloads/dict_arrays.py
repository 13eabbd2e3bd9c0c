"""Dicts of arrays, as ``model.fit`` takes them (the functional-API guide fits its ticket model
with ``fit({"title": ..., "body": ..., "tags": ...}, {"priority": ..., "department": ...})``):
``load_data`` returns ``(x_train, y_train, x_val, y_val)`` where each x and y is a dict."""

from __future__ import annotations

from typing import Any

from workloads.multi_io import build_model, make_arrays

__all__ = ["build_model", "load_data"]


def load_data() -> tuple[Any, ...]:
    x_train, y_train = make_arrays(512, seed=0)
    x_val, y_val = make_arrays(128, seed=1)
    return x_train, y_train, x_val, y_val
