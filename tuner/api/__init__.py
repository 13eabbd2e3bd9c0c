"""tuner from Python: :func:`search` takes the user's own functions — defined in a module, a
script or a notebook cell — and returns a :class:`SearchResult`; :func:`lr_find` runs the
learning-rate range test on them.

The same search as ``tuner search`` (one options model, :class:`tuner.driver.options.SearchOptions`;
the same storage, resume and checks); nothing here imports TensorFlow in this process.
"""

from __future__ import annotations

from tuner.api._load import load_study
from tuner.api._lr_find import LrFindResult, lr_find
from tuner.api._result import SearchResult
from tuner.api._search import search

__all__ = ["LrFindResult", "SearchResult", "load_study", "lr_find", "search"]
