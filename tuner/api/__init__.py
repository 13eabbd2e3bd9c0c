"""tuner from Python: :func:`search` takes the user's own functions (from a module, a script or a
notebook cell) and returns a :class:`SearchResult`; :func:`lr_find` runs the range test on them.
The same search as ``tuner search``; nothing here imports TensorFlow in this process.
"""

from __future__ import annotations

from tuner.api._lr_find import LrFindResult, lr_find
from tuner.api._result import SearchResult, load_study
from tuner.api._search import search

__all__ = ["LrFindResult", "SearchResult", "load_study", "lr_find", "search"]
