"""tuner from Python, on the user's own functions (nothing here imports TensorFlow)."""

from __future__ import annotations

from tuner.api._lr_find import LrFindResult, lr_find
from tuner.api._result import SearchResult, load_study
from tuner.api._search import search

__all__ = ["LrFindResult", "SearchResult", "load_study", "lr_find", "search"]
