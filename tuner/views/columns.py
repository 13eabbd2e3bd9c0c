"""Which columns of a table fit a page, and how wide each one is: pure, over rendered cells.

A cut number is worse than a missing column: in a fixed priority, each column that still fits at
its narrowest is chosen (only free text may wrap); the first that does not fit ends the choice,
so a wider page only ever adds columns. The widths assume :mod:`tuner.console.display`'s style:
no frame, no edge padding, each column after the first costing three more (`` │ ``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

GAP = 3  # between two columns: a space, the rule, a space

WRAP_FLOOR = 24
"""The narrowest a free-text column is made when its text is longer: narrower, a sentence takes
too many lines to read (a word longer than this is folded)."""

EMPTY_CELLS = frozenset({"", "-"})


@dataclass(frozen=True)
class Layout:
    """The columns to draw (indices, in table order) and each one's width (the cells')."""

    columns: list[int]
    widths: list[int]

    @property
    def width(self) -> int:
        """The width of the whole table."""
        return table_width(self.widths)


def table_width(widths: Sequence[int]) -> int:
    """The page width a table with columns of these widths takes."""
    return sum(widths) + GAP * max(len(widths) - 1, 0)


def natural_width(header: str, cells: Iterable[str]) -> int:
    """The width that shows the header and every cell on one line."""
    return max([len(header), *(len(cell) for cell in cells)])


def narrowest_width(header: str, cells: Sequence[str], wraps: bool) -> int:
    """The narrowest the column may be: every cell whole, or :data:`WRAP_FLOOR` if it wraps."""
    header_word = max((len(word) for word in header.split()), default=0)
    if not wraps:
        return max(header_word, *(len(cell) for cell in cells), 1)
    longest = max((len(cell) for cell in cells), default=1)
    return max(header_word, min(longest, WRAP_FLOOR), 1)


def is_empty(cells: Iterable[str]) -> bool:
    """Whether a column says nothing: every cell ``-`` or blank."""
    return all(cell.strip() in EMPTY_CELLS for cell in cells)


def fit_columns(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    width: int,
    priority: Sequence[str],
    wrapping: Iterable[str] = (),
    keep: Iterable[str] = (),
    drop: Iterable[str] = (),
    wide: bool = False,
) -> Layout:
    """The columns that fit in ``width`` and their widths.

    ``keep`` columns are always shown; the others in ``priority`` order (unnamed ones last) while
    each still fits at its narrowest; ``drop`` and all-empty columns are left out. Space left
    over first unwraps the one-word headers (all or none), then widens the free text. With
    ``wide`` every column is shown, free text narrowed towards its narrowest, so the table may be
    wider than ``width``. A number's column is never narrower than its longest cell.
    """
    wraps, kept = set(wrapping), set(keep)
    columns = [[row[i] for row in rows] for i in range(len(headers))]
    least = [narrowest_width(h, c, h in wraps) for h, c in zip(headers, columns, strict=True)]
    most = [natural_width(h, c) for h, c in zip(headers, columns, strict=True)]
    order = _order(headers, priority, kept)
    if wide:
        chosen = list(range(len(headers)))
    else:
        left_out = set(drop)
        chosen = [i for i in order if headers[i] in kept]
        for i in order:
            if i in chosen or headers[i] in left_out or (rows and is_empty(columns[i])):
                continue
            if table_width([least[j] for j in [*chosen, i]]) > width:
                break  # no later column shows while an earlier one does not
            chosen.append(i)
    widths = {i: least[i] for i in chosen}
    spare = width - table_width(list(widths.values()))
    # The header row is as tall as its tallest header: unwrap the headers of all the one-word
    # columns or of none. The free text then takes what is left.
    unwrap = sum(most[i] - least[i] for i in chosen if headers[i] not in wraps)
    if unwrap <= spare:
        widths.update({i: most[i] for i in chosen if headers[i] not in wraps})
        spare -= unwrap
    for i in order:
        if i in widths and headers[i] in wraps and spare > 0:
            grow = min(spare, most[i] - widths[i])
            widths[i] += grow
            spare -= grow
    shown = sorted(chosen)
    return Layout(columns=shown, widths=[widths[i] for i in shown])


def _order(headers: Sequence[str], priority: Sequence[str], kept: set[str]) -> list[int]:
    """Column indices: the kept ones, then by priority, then the rest in table order."""
    rank = {header: n for n, header in enumerate(priority)}
    return sorted(
        range(len(headers)),
        key=lambda i: (headers[i] not in kept, rank.get(headers[i], len(rank)), i),
    )
