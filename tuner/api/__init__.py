"""tuner from Python: :func:`search` takes the user's own functions — defined in a module, a
script or a notebook cell — and returns a :class:`SearchResult`.

The same search as ``tuner search`` (one options model, :class:`tuner.driver.options.SearchOptions`;
the same storage, resume and checks); nothing here imports TensorFlow in this process.
"""

from __future__ import annotations

from tuner.api._result import SearchResult
from tuner.api._search import search

__all__ = ["SearchResult", "search"]
