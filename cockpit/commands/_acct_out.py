"""Plain-text output shared by the accounting commands: aligned columns of
sanitised cluster strings (never markup), times, durations, query costs."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable, Sequence
from typing import Any

from cockpit.text import sanitize, truncate


def clock(epoch: int | float | None) -> str:
    return "-" if not epoch else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))


def short_clock(epoch: int | float | None) -> str:
    return "-" if not epoch else time.strftime("%m-%d %H:%M", time.localtime(epoch))


def duration(seconds: float | None) -> str:
    """``1-02:03:04`` / ``02:03:04`` like Slurm's Elapsed."""
    if seconds is None:
        return "-"
    s = int(seconds)
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"


def span(seconds: float) -> str:
    d = seconds / 86400
    text = f"{d:.1f} d" if d >= 1 else f"{seconds / 3600:.1f} h"
    return text.replace(".0 ", " ")


def cell(value: Any, width: int = 40) -> str:
    return truncate(sanitize("" if value is None else str(value)), width)


def table(head: Sequence[str], rows: Iterable[Sequence[Any]], widths: dict[int, int] | None = None) -> list[str]:
    """Aligned columns; the last column is not padded."""
    widths = widths or {}
    cells = [list(head)] + [[cell(v, widths.get(i, 40)) for i, v in enumerate(r)] for r in rows]
    size = [max(len(r[i]) for r in cells) for i in range(len(head))]
    return ["  ".join(c.ljust(w) for c, w in zip(r[:-1], size[:-1])) + "  " + r[-1] for r in cells]


def print_lines(lines: Iterable[str]) -> None:
    for line in lines:
        print(line.rstrip())


def print_costs(costs: Iterable[Any]) -> None:
    for c in costs:
        print(f"query: {sanitize(c.describe())}")


def print_json(obj: Any) -> None:
    """Indented JSON. msgspec where installed: json's indenting encoder is pure Python
    and took 4 s for a history of 28k jobs."""
    try:
        import msgspec

        sys.stdout.write(msgspec.json.format(msgspec.json.encode(obj), indent=1).decode("utf-8"))
    except ImportError:
        sys.stdout.write(json.dumps(obj, indent=1, ensure_ascii=False))
    sys.stdout.write("\n")
