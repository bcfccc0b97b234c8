"""Plain-text columns for headless tables: fitted to a terminal, whole in a pipe, or TSV/CSV.

Rich's tables shrink every column alike: at 80 columns the node names, job ids and
users came out as ``…`` or zero wide while a list of GPU indexes kept 42 columns.
Here a column is either a key (never cut: an id, a name, a user, a state) or a
cuttable list with a priority; only the cuttable ones give way, the lowest first,
down to their header's width. With no terminal to fit (a pipe, ``| less``) nothing
is cut at all. Cells are sanitised text; an overlong line is left whole, never
wrapped by us.
"""

from __future__ import annotations

import csv
import io
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from cockpit.text import cell_len, sanitize, truncate

GAP = "  "


@dataclass(frozen=True, slots=True)
class Column:
    head: str
    cut: int = 0  # 0: a key column, never cut; 1, 2 ...: cut in this order when the line is too wide
    least: int = 0  # narrowest a cut column gets (its header's width at least)
    drop: bool = False  # left out (width 0) when the line is still too wide with every cut made


def output_width(stream=None) -> int | None:
    """The width to fit: $COLUMNS when set, else the terminal's; None in a pipe."""
    env = os.environ.get("COLUMNS", "")
    if env.isdecimal() and int(env) > 0:
        return int(env)
    stream = stream or sys.stdout
    try:
        if stream.isatty():
            return os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        pass
    return None


def fit(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int | None) -> list[int]:
    """Each column's width: its widest cell, then the cuttable ones narrowed in their
    order until the line fits ``width`` (None: never narrowed)."""
    widths = [max([cell_len(c.head)] + [cell_len(r[i]) for r in rows]) for i, c in enumerate(columns)]
    if width is None:
        return widths
    over = sum(widths) + len(GAP) * (len(widths) - 1) - width
    for i in sorted((i for i, c in enumerate(columns) if c.cut), key=lambda i: columns[i].cut):
        if over <= 0:
            break
        floor = max(cell_len(columns[i].head), columns[i].least, 1)
        give = min(over, max(0, widths[i] - floor))
        widths[i] -= give
        over -= give
    for i in reversed(range(len(columns))):  # the last droppable first
        if over <= 0:
            break
        if columns[i].drop and widths[i]:
            over -= widths[i] + len(GAP)
            widths[i] = 0
    return widths


def _pad(text: str, width: int) -> str:
    return text + " " * max(0, width - cell_len(text))


def text_lines(columns: Sequence[Column], rows: Sequence[Sequence[object]], width: int | None) -> list[str]:
    """The header and the rows as aligned text, fitted to ``width``; trailing spaces dropped."""
    cells = [[sanitize(v) for v in r] for r in rows]
    widths = fit(columns, cells, width)
    out = []
    for r in [[c.head for c in columns]] + cells:
        out.append(GAP.join(_pad(truncate(v, w), w) for v, w in zip(r, widths) if w).rstrip())
    return out


def delimited(columns: Sequence[Column], rows: Sequence[Sequence[object]], fmt: str) -> str:
    """``tsv`` (tabs and newlines inside a value become spaces) or ``csv`` (RFC 4180
    quoting): the header and every cell whole."""
    head = [c.head for c in columns]
    cells = [[sanitize(v) for v in r] for r in rows]  # sanitize: tabs, newlines, escapes out
    if fmt == "tsv":
        return "".join("\t".join(r) + "\n" for r in [head] + cells)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(head)
    writer.writerows(cells)
    return buf.getvalue()
