"""How a table's columns share the width they have (no Textual here).

Each column has a natural width: the widest of its label (plus one cell for
the sort arrow) and its cells (measured off the UI thread, kept in
:class:`~cockpit.tui.rows.TableData`); a column whose cells are drawn from the
clock has the fixed width it declares. :func:`layout` places them:

1. everything at its natural width, in schema order, when that fits: no value
   is cut while width is free;
2. else the widest columns are cut down to a common limit (never below the
   ``cap`` the config sets, ``[tui] max_cell_width``), still in schema order;
3. else the key columns (``Column.pin``: a job's id, state, user, GPUs and
   reason) stay, each cut to ``cap`` or less, and the others scroll a column at
   a time (``first``: how many are scrolled off to the left); what is shown is
   still in schema order: a narrower terminal hides columns, it never moves
   them (issue 25: the order changed with the width).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len

GUTTER = 1  # the mark column at the left of every line
MIN_SCROLL_AREA = 20  # cells kept for the scrolling columns in mode 3 when the key columns are wide
MIN_PARTIAL = 6  # a scrolling column shown cut needs at least this many cells


@dataclass(frozen=True, slots=True)
class Placed:
    index: int  # into the table's columns
    width: int


@dataclass(frozen=True, slots=True)
class ColumnLayout:
    placed: tuple[Placed, ...]
    hidden_left: int = 0  # scrolling columns scrolled off to the left
    hidden_right: int = 0  # scrolling columns that do not fit on the right
    pinned: int = 0  # how many of ``placed`` are key columns held in place (mode 3)
    pins: tuple[int, ...] = ()  # their indexes

    @property
    def scrolls(self) -> bool:
        return bool(self.hidden_left or self.hidden_right)

    def line_width(self) -> int:
        return GUTTER + sum(p.width + 1 for p in self.placed)

    def column_at(self, x: int) -> int | None:
        """The column index under screen cell ``x`` (None for the gutter or past the end)."""
        pos = GUTTER
        for p in self.placed:
            if pos <= x < pos + p.width + 1:
                return p.index
            pos += p.width + 1
        return None


def cells_width(texts: Iterable[str]) -> int:
    """The widest of ``texts`` in terminal cells (CJK and emoji take two)."""
    texts = list(texts)
    width = max(map(len, texts), default=0)
    if not "".join(texts).isascii():
        width = max(width, max((cell_len(t) for t in texts if not t.isascii()), default=0))
    return width


def data_widths(cells: Sequence[Sequence[str]], ncols: int) -> list[int]:
    """Per column, the widest cell of ``cells`` (rows of cell texts)."""
    if not cells:
        return [0] * ncols
    return [cells_width(col) for col in zip(*cells)]


def grow_widths(widths: list[int], cells: Sequence[str]) -> None:
    """Widen ``widths`` in place to hold one more row's cells."""
    for i, text in enumerate(cells):
        w = len(text) if text.isascii() else cell_len(text)
        if w > widths[i]:
            widths[i] = w


def natural_widths(columns: Sequence[Any], widths: Sequence[int]) -> list[int]:
    out = []
    for i, col in enumerate(columns):
        label = cell_len(col.label) + 1  # + the sort arrow
        data = col.width if col.live else (widths[i] if i < len(widths) else col.width)
        out.append(max(label, data, 1))
    return out


def _total(widths: Iterable[int]) -> int:
    return sum(w + 1 for w in widths)


def _fill(natural: Sequence[int], floors: Sequence[int], room: int, low: int) -> list[int] | None:
    """The widths ``min(natural, limit)`` (never below each floor) for the largest
    limit >= ``low`` that fits in ``room``; None when even ``low`` does not fit."""
    def cut(limit: int) -> list[int]:
        return [max(min(n, limit), f) for n, f in zip(natural, floors)]

    if _total(cut(low)) > room:
        return None
    lo, hi = low, max(natural, default=low)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _total(cut(mid)) <= room:
            lo = mid
        else:
            hi = mid - 1
    return cut(lo)


def layout(columns: Sequence[Any], widths: Sequence[int], width: int, cap: int, first: int = 0,
           scroll_room: int = MIN_SCROLL_AREA, hidden: frozenset[int] = frozenset()) -> ColumnLayout:
    """Place ``columns`` (with data ``widths``) in ``width`` cells; ``cap``: the width
    a column may be cut to while others need room (a column's own ``cap`` wins);
    ``first``: scrolled-off columns; ``scroll_room``: cells the key columns leave
    to the scrolling ones; ``hidden``: indexes of columns the operator chose not to see.
    A ``when_data`` column none of whose cells has text is left out as a hidden one."""
    empty = frozenset(i for i, c in enumerate(columns)
                      if getattr(c, "when_data", False) and not (widths[i] if i < len(widths) else 0))
    hidden = hidden | empty
    if hidden:
        keep = [i for i in range(len(columns)) if i not in hidden] or [0]
        sub = layout([columns[i] for i in keep], [widths[i] if i < len(widths) else 0 for i in keep] if widths else (),
                     width, cap, first, scroll_room)
        return ColumnLayout(tuple(Placed(keep[p.index], p.width) for p in sub.placed), sub.hidden_left,
                            sub.hidden_right, sub.pinned, tuple(keep[i] for i in sub.pins))
    room = max(1, width - GUTTER)
    natural = natural_widths(columns, widths)
    floors = [min(n, cell_len(c.label) + 1) for n, c in zip(natural, columns)]
    if _total(natural) <= room:
        return ColumnLayout(tuple(Placed(i, w) for i, w in enumerate(natural)))
    caps = [c.cap or cap for c in columns]
    floors_cut = [max(f, min(n, c.cap)) if c.cap else f for f, n, c in zip(floors, natural, columns)]
    cut = _fill(natural, floors_cut, room, max(1, cap))
    if cut is not None:
        return ColumnLayout(tuple(Placed(i, w) for i, w in enumerate(cut)))
    pins = [i for i, c in enumerate(columns) if c.pin] or [0]
    rest = [i for i in range(len(columns)) if i not in pins]
    capped = [min(natural[i], max(caps[i], floors[i])) for i in pins]
    keep = min(scroll_room, room // 4) if rest else 0
    pinned = _fill(capped, [min(floors[i], 4) for i in pins], room - keep, 1) or [max(1, room // len(pins) - 1)] * len(pins)
    placed = [Placed(i, w) for i, w in zip(pins, pinned)]
    left = room - _total(pinned)
    first = max(0, min(first, len(rest) - 1)) if rest else 0
    shown = 0
    for i in rest[first:]:
        w = min(natural[i], max(caps[i], floors[i]))
        if w + 1 <= left:
            placed.append(Placed(i, w))
        elif left - 1 >= MIN_PARTIAL or shown == 0:
            if left >= 2:
                placed.append(Placed(i, left - 1))
                left = 0
                shown += 1
            break
        else:
            break
        left -= w + 1
        shown += 1
    placed.sort(key=lambda p: p.index)  # the schema's order, whatever scrolled in
    return ColumnLayout(tuple(placed), first, len(rest) - first - shown, len(pins), tuple(pins))
