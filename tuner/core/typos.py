"""The name a misspelt one was meant to be (:func:`closest`, wherever tuner says "did you mean"):
the fewest edits, a transposition counting as one (optimal string alignment), difflib's ratio
breaking ties. difflib alone scores a transposition low: ``adma`` came out nearer ``adamax``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

DEFAULT_CUTOFF = 0.6
"""difflib's default: how alike (0 to 1) a name must be to be suggested at all."""


def edit_distance(first: str, second: str) -> int:
    """The optimal-string-alignment distance (a neighbour transposition is one edit)."""
    previous2: list[int] = []
    previous = list(range(len(second) + 1))
    for i, left in enumerate(first, start=1):
        row = [i] + [0] * len(second)
        for j, right in enumerate(second, start=1):
            row[j] = min(
                previous[j] + 1,  # deletion
                row[j - 1] + 1,  # insertion
                previous[j - 1] + (left != right),  # substitution (or a match)
            )
            if i > 1 and j > 1 and left == second[j - 2] and first[i - 2] == right:
                row[j] = min(row[j], previous2[j - 2] + 1)  # transposition
        previous2, previous = previous, row
    return previous[-1]


def similarity(first: str, second: str) -> float:
    """1 less the edits per character of the longer name (1.0: the same; 0.0: nothing alike)."""
    longest = max(len(first), len(second))
    return 1.0 if longest == 0 else 1.0 - edit_distance(first, second) / longest


def closest(word: str, candidates: Iterable[str], cutoff: float = DEFAULT_CUTOFF) -> str | None:
    """The candidate ``word`` is likeliest a misspelling of: among those whose edit similarity or
    difflib's ratio reaches ``cutoff``, the fewest edits, then difflib's ratio, then the first;
    ``None`` when none reaches it."""
    best: tuple[int, float, int] | None = None
    found = None
    for order, candidate in enumerate(candidates):
        ratio = difflib.SequenceMatcher(None, word, candidate).ratio()
        if max(ratio, similarity(word, candidate)) < cutoff:
            continue
        key = (edit_distance(word, candidate), -ratio, order)
        if best is None or key < best:
            best, found = key, candidate
    return found
